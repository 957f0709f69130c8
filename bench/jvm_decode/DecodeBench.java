import cdclake.jvm.FastDecode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The JVM fast path's decoders alone, on one thread, without Spark: {@code FastDecode.invoke} over
 * each template of {@code bench/normalize} in turn. Arguments: the templates file (format TAB value
 * per line), messages per round, rounds. Prints each round's time, then the last round's
 * nanoseconds per message of each format. Run by {@code bench/jvm_decode/run.py}.
 */
public final class DecodeBench {
    private DecodeBench() {
    }

    public static void main(String[] args) throws Exception {
        List<UTF8String> formats = new ArrayList<>();
        List<byte[]> values = new ArrayList<>();
        for (String line : Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8)) {
            int tab = line.indexOf('\t');
            formats.add(UTF8String.fromString(line.substring(0, tab)));
            values.add(line.substring(tab + 1).getBytes(StandardCharsets.UTF_8));
        }
        int messages = Integer.parseInt(args[1]);
        int rounds = Integer.parseInt(args[2]);
        UTF8String utc = UTF8String.fromString("UTC");
        long rows = 0;
        long[] nanos = new long[formats.size()];
        for (int round = 1; round <= rounds; round++) {
            long start = System.nanoTime();
            for (int k = 0; k < formats.size(); k++) {
                long formatStart = System.nanoTime();
                for (int i = 0; i < messages / formats.size(); i++) {
                    ArrayData decoded = FastDecode.invoke(formats.get(k), values.get(k), null, utc);
                    if (decoded == null) {
                        throw new IllegalStateException(formats.get(k) + ": the fast path declined its template");
                    }
                    rows += decoded.numElements();
                }
                nanos[k] = System.nanoTime() - formatStart;
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            System.out.printf("round %d: %.2fs = %,.0f messages/s%n", round, seconds, messages / seconds);
        }
        for (int k = 0; k < formats.size(); k++) {
            System.out.printf("  %s (%d bytes): %,.0f ns/message%n", formats.get(k), values.get(k).length,
                    nanos[k] / (double) (messages / formats.size()));
        }
        System.out.println("rows: " + rows);
    }
}
