package cdclake.jvm;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.HashMap;
import java.util.TreeMap;
import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.expressions.Aggregator;

/**
 * An exact count of rows by key, as a Spark SQL aggregate: {@code cdclake_key_counts(key)}, a JSON
 * object from each distinct non-null key to its number of rows (nulls are not counted).
 *
 * <p>Spark's {@code Dataset.observe} takes aggregates only, without a GROUP BY: with this one, a
 * job counts what it writes by any small set of keys (topic, kind, op, table, ...) in the same pass
 * that writes it, instead of in a job of its own over a cached copy. {@link Extensions} gives it
 * to every session as {@code cdclake_key_counts}.
 */
public final class KeyCounts extends Aggregator<String, HashMap<String, Long>, String> {
    private static final long serialVersionUID = 1L;
    private static final ObjectMapper JSON = new ObjectMapper();

    @Override
    public HashMap<String, Long> zero() {
        return new HashMap<>();
    }

    @Override
    public HashMap<String, Long> reduce(HashMap<String, Long> counts, String key) {
        if (key != null) {
            counts.merge(key, 1L, Long::sum);
        }
        return counts;
    }

    @Override
    public HashMap<String, Long> merge(HashMap<String, Long> left, HashMap<String, Long> right) {
        right.forEach((key, count) -> left.merge(key, count, Long::sum));
        return left;
    }

    @Override
    public String finish(HashMap<String, Long> counts) {
        try {
            return JSON.writeValueAsString(new TreeMap<>(counts));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    @SuppressWarnings("unchecked")
    public Encoder<HashMap<String, Long>> bufferEncoder() {
        return Encoders.javaSerialization((Class<HashMap<String, Long>>) (Class<?>) HashMap.class);
    }

    @Override
    public Encoder<String> outputEncoder() {
        return Encoders.STRING();
    }
}
