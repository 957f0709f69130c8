package cdclake.jvm;

import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF4;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;

/**
 * The JVM fast path of decoding, as a Spark SQL function:
 * {@code cdclake_fast_decode(format, value, key, source_timezone)}, an array of change rows (several for
 * the multi-row messages of the Canal family).
 *
 * <p>The Python decoders ({@code spark_jobs/formats/}) are the reference and decide every case; a
 * decoder here takes only the common shape of its format, where its rules are few and plain, and
 * gives exactly the Python decoder's row for it. Anything else it <em>declines</em> (returns
 * null) and the message goes to the Python decoder, which also owns every rejection: a message
 * is never quarantined or dropped here. {@code spark_jobs/jvm_decode.py} routes the messages and
 * builds the change rows from the returned structs ({@link Rows#SCHEMA_DDL}); the fixture suite
 * checks that both paths give the same rows.
 *
 * <p>The registry of the formats with a fast path: {@link #DECODERS}, named like the Python
 * registry ({@code spark_jobs/formats/__init__.py}).
 */
public final class FastDecode implements UDF4<String, byte[], byte[], String, List<Row>> {
    private static final long serialVersionUID = 1L;

    /** One format's fast path: the change rows of {@code value}, or null to decline. */
    interface Decoder {
        List<Row> decode(byte[] value, byte[] key, String zone);
    }

    static final Map<String, Decoder> DECODERS = Map.of(
            "maxwell_json", (value, key, zone) -> one(MaxwellJson.decode(value)),
            "oms_default", (value, key, zone) -> one(OmsDefault.decode(value)),
            "dataworks_json", (value, key, zone) -> one(DataWorksJson.decode(value)),
            "debezium_json", (value, key, zone) -> one(DebeziumJson.decode(value, key)),
            "drs_mongo", (value, key, zone) -> one(DrsMongo.decode(value)),
            "canal_json", (value, key, zone) -> CanalFamily.decode(CanalFamily.CANAL_JSON, value, zone),
            "drs_json", (value, key, zone) -> CanalFamily.decode(CanalFamily.DRS_JSON, value, zone),
            "cloudcanal_json", (value, key, zone) -> CanalFamily.decode(CanalFamily.CLOUDCANAL_JSON, value, zone));

    /**
     * Registers the function in {@code spark} as {@code name}, marked nondeterministic although it
     * is not: Spark then evaluates it once per message. A deterministic function is copied into
     * every filter the optimizer pushes below it or infers (the test that sends declined
     * messages to Python, {@code posexplode}'s non-empty test), so it ran up to three times.
     */
    public static void register(SparkSession spark, String name) {
        DataType rows = DataType.fromDDL("array<struct<" + Rows.SCHEMA_DDL + ">>");
        spark.udf().register(name, functions.udf(new FastDecode(), rows).asNondeterministic());
    }

    private static List<Row> one(Row row) {
        return row == null ? null : List.of(row);
    }

    @Override
    public List<Row> call(String format, byte[] value, byte[] key, String zone) {
        Decoder decoder = format == null ? null : DECODERS.get(format);
        if (decoder == null || value == null) {
            return null;
        }
        try {
            return decoder.decode(value, key, zone);
        } catch (RuntimeException e) {
            return null; // whatever surprised the fast path, the reference decoder decides
        }
    }
}
