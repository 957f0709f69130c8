package cdclake.jvm;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The fast path's formats and change-row struct, from {@code fast_path.json} (packed in the jar,
 * also read by {@code spark_jobs/jvm_decode.py}): one list for both languages.
 */
final class FastPath {
    /** The formats with a fast path, as the Python registry names them. */
    static final List<String> FORMATS;
    /** The change-row struct's fields in order, as Spark DDL ({@link Rows#change} fills it). */
    static final String ROW_SCHEMA;

    static {
        Map<?, ?> spec = read();
        List<String> formats = new ArrayList<>();
        for (Object format : (List<?>) spec.get("formats")) {
            formats.add((String) format);
        }
        FORMATS = List.copyOf(formats);
        ROW_SCHEMA = (String) spec.get("row_schema");
    }

    private FastPath() {
    }

    private static Map<?, ?> read() {
        try (InputStream in = FastPath.class.getResourceAsStream("/fast_path.json")) {
            if (in == null) {
                throw new IllegalStateException("fast_path.json is not in the jar");
            }
            if (!(Json.parse(in.readAllBytes()) instanceof Map<?, ?> spec)) {
                throw new IllegalStateException("fast_path.json is not a JSON object");
            }
            return spec;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
