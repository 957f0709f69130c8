package cdclake.jvm;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The JVM fast path of decoding, as a Spark SQL function:
 * {@code cdclake_jvm.fast_decode(format, value, key, source_timezone)}, an array of change rows
 * (several for the multi-row messages of the Canal family).
 *
 * <p>The Python decoders ({@code include/cdclake/formats/}) are the reference and decide every case; a
 * decoder here takes only the common shape of its format, where its rules are few and plain, and
 * gives exactly the Python decoder's row for it. Anything else it <em>declines</em> (returns
 * null) and the message goes to the Python decoder, which also owns every rejection: a message
 * is never quarantined or dropped here. An exception inside a decoder is a bug, not a shape: it
 * declines too, but with an empty array, so that the run stats count it apart and the pipeline
 * logs the message's coordinates (this JVM logs the exception). {@code spark_jobs/jvm_decode.py} routes the messages and
 * builds the change rows from the returned structs ({@link Rows#SCHEMA_DDL}); the fixture suite
 * checks that both paths give the same rows.
 *
 * <p>It is a function of Spark's function catalog API ({@link Functions} serves it), not a UDF:
 * Spark calls the static {@link #invoke} from its generated code with its own values (UTF-8
 * strings, bytes) and stores the Catalyst rows it returns as they are, where a UDF's Java rows,
 * lists, maps and strings were each converted again. It declares itself nondeterministic,
 * although it is not: Spark then evaluates it once per message. A deterministic function is
 * copied into every filter the optimizer pushes below it or infers (the test that sends declined
 * messages to Python, {@code posexplode}'s non-empty test), so it ran up to three times.
 *
 * <p>The registry of the formats with a fast path: {@link #DECODERS}, named like the Python
 * registry ({@code include/cdclake/formats/__init__.py}).
 */
public final class FastDecode implements UnboundFunction, ScalarFunction<ArrayData> {
    private static final long serialVersionUID = 1L;
    /** The function's name in {@link Functions}. */
    static final String NAME = "fast_decode";
    private static final DataType RESULT = DataType.fromDDL("array<struct<" + Rows.SCHEMA_DDL + ">>");
    // java.util.logging: Spark routes it to its own log (jul-to-slf4j), without a dependency here.
    private static final Logger LOG = Logger.getLogger(FastDecode.class.getName());
    private static final AtomicLong FAILURES = new AtomicLong();
    /** The format id of the always failing decoder ({@code jvm_decode.FAILING_FORMAT}). */
    static final String FAILING_FORMAT = "cdclake_failing_decoder";

    /** One format's fast path: the change rows of {@code value}, or null to decline. */
    interface Decoder {
        List<InternalRow> decode(byte[] value, byte[] key, String zone);
    }

    static final Map<UTF8String, Decoder> DECODERS = Map.of(
            UTF8String.fromString("maxwell_json"), (value, key, zone) -> one(MaxwellJson.decode(value)),
            UTF8String.fromString("oms_default"), (value, key, zone) -> one(OmsDefault.decode(value)),
            UTF8String.fromString("dataworks_json"), (value, key, zone) -> one(DataWorksJson.decode(value)),
            UTF8String.fromString("debezium_json"), (value, key, zone) -> one(DebeziumJson.decode(value, key)),
            UTF8String.fromString("drs_mongo"), (value, key, zone) -> one(DrsMongo.decode(value)),
            UTF8String.fromString("canal_json"),
            (value, key, zone) -> CanalFamily.decode(CanalFamily.CANAL_JSON, value, zone),
            UTF8String.fromString("drs_json"),
            (value, key, zone) -> CanalFamily.decode(CanalFamily.DRS_JSON, value, zone),
            UTF8String.fromString("cloudcanal_json"),
            (value, key, zone) -> CanalFamily.decode(CanalFamily.CLOUDCANAL_JSON, value, zone),
            // Not a format (the configuration accepts only the Python registry's): a decoder that
            // always fails, for the tests of what a failing fast path does.
            UTF8String.fromString(FAILING_FORMAT), (value, key, zone) -> {
                throw new IllegalStateException("a decoder that always fails");
            });

    static {
        // The formats of fast_path.json, which the Python side routes here, each have a decoder.
        Set<String> named = new TreeSet<>();
        DECODERS.keySet().forEach(format -> named.add(format.toString()));
        named.remove(FAILING_FORMAT);
        if (!named.equals(new TreeSet<>(FastPath.FORMATS))) {
            throw new IllegalStateException("fast_path.json names " + FastPath.FORMATS
                    + " but the jar decodes " + named);
        }
    }

    /**
     * The change rows of one message, or null to decline: what Spark's generated code calls
     * (the function API's "magic" method, found by its name and argument types).
     */
    public static ArrayData invoke(UTF8String format, byte[] value, byte[] key, UTF8String zone) {
        Decoder decoder = format == null ? null : DECODERS.get(format);
        if (decoder == null || value == null) {
            return null;
        }
        try {
            List<InternalRow> rows = decoder.decode(value, key, zone == null ? null : zone.toString());
            return rows == null || rows.isEmpty() ? null : new GenericArrayData(rows.toArray());
        } catch (RuntimeException e) {
            // The reference decoder decides the message; the exception is logged, a bug that
            // hits every message only now and then.
            long failures = FAILURES.incrementAndGet();
            if (failures <= 10 || failures % 10_000 == 0) {
                LOG.log(Level.WARNING, "fast path of " + format + " failed (" + failures
                        + " time(s) in this JVM); the Python decoder decides the message", e);
            }
            return new GenericArrayData(new Object[0]);
        }
    }

    private static List<InternalRow> one(InternalRow row) {
        return row == null ? null : List.of(row);
    }

    @Override
    public BoundFunction bind(StructType inputType) {
        return this;
    }

    @Override
    public DataType[] inputTypes() {
        return new DataType[] {DataTypes.StringType, DataTypes.BinaryType, DataTypes.BinaryType,
                DataTypes.StringType};
    }

    @Override
    public DataType resultType() {
        return RESULT;
    }

    @Override
    public boolean isDeterministic() {
        return false;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String canonicalName() {
        return "cdclake.jvm." + NAME;
    }

    @Override
    public String description() {
        return NAME + "(format, value, key, source_timezone): the fast path's change rows, or null";
    }
}
