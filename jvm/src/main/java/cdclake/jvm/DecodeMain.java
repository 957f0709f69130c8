package cdclake.jvm;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The fast path's decoders without Spark, over standard input and output: what the equivalence
 * test ({@code tests/formats/test_jvm_properties.py}) compares with the Python decoders, one JVM
 * for a whole test run.
 *
 * <p>Each input line is a message: format, source time zone, value and key (base64; "-" for
 * none), tab-separated. Each output line is its outcome, as JSON: {@code {"path": "fast",
 * "rows": [...]}} (the rows' fields as {@code fast_path.json} names them, times in epoch
 * microseconds), {@code {"path": "declined"}} or {@code {"path": "failed", "error": "..."}}.
 */
public final class DecodeMain {
    private DecodeMain() {
    }

    public static void main(String[] args) throws IOException {
        StructType schema = StructType.fromDDL(Rows.SCHEMA_DDL);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Writer out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            String[] parts = line.split("\t", -1);
            FastDecode.Decoder decoder = FastDecode.DECODERS.get(UTF8String.fromString(parts[0]));
            StringBuilder outcome = new StringBuilder();
            try {
                List<InternalRow> rows = decoder == null ? null
                        : decoder.decode(bytes(parts[2]), bytes(parts[3]), parts[1]);
                if (rows == null || rows.isEmpty()) {
                    outcome.append("{\"path\": \"declined\"}");
                } else {
                    outcome.append("{\"path\": \"fast\", \"rows\": [");
                    for (int i = 0; i < rows.size(); i++) {
                        outcome.append(i == 0 ? "" : ", ");
                        row(outcome, rows.get(i), schema);
                    }
                    outcome.append("]}");
                }
            } catch (RuntimeException e) {
                outcome.setLength(0);
                outcome.append("{\"path\": \"failed\", \"error\": ");
                quote(outcome, e.toString());
                outcome.append('}');
            }
            out.write(outcome.append('\n').toString());
            out.flush();
        }
    }

    private static byte[] bytes(String base64) {
        return base64.equals("-") ? null : Base64.getDecoder().decode(base64);
    }

    private static void row(StringBuilder out, InternalRow row, StructType schema) {
        StructField[] fields = schema.fields();
        out.append('{');
        for (int i = 0; i < fields.length; i++) {
            out.append(i == 0 ? "" : ", ");
            quote(out, fields[i].name());
            out.append(": ");
            DataType type = fields[i].dataType();
            if (row.isNullAt(i)) {
                out.append("null");
            } else if (type instanceof BooleanType) {
                out.append(row.getBoolean(i));
            } else if (type instanceof LongType) {
                out.append(row.getLong(i));
            } else if (type instanceof ArrayType) {
                texts(out, row.getArray(i));
            } else if (type instanceof MapType) {
                map(out, row.getMap(i));
            } else {
                quote(out, row.getUTF8String(i).toString());
            }
        }
        out.append('}');
    }

    private static void texts(StringBuilder out, ArrayData texts) {
        out.append('[');
        for (int i = 0; i < texts.numElements(); i++) {
            out.append(i == 0 ? "" : ", ");
            text(out, texts, i);
        }
        out.append(']');
    }

    private static void map(StringBuilder out, MapData map) {
        ArrayData keys = map.keyArray();
        ArrayData values = map.valueArray();
        out.append('{');
        for (int i = 0; i < map.numElements(); i++) {
            out.append(i == 0 ? "" : ", ");
            text(out, keys, i);
            out.append(": ");
            text(out, values, i);
        }
        out.append('}');
    }

    private static void text(StringBuilder out, ArrayData texts, int i) {
        if (texts.isNullAt(i)) {
            out.append("null");
        } else {
            quote(out, texts.getUTF8String(i).toString());
        }
    }

    /** A JSON string of ASCII only: every other character escaped, so that nothing is re-encoded. */
    private static void quote(StringBuilder out, String text) {
        out.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        out.append('"');
    }
}
