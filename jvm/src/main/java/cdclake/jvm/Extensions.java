package cdclake.jvm;

import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo;
import org.apache.spark.sql.execution.aggregate.ScalaAggregator$;
import org.apache.spark.sql.expressions.UserDefinedAggregator;
import org.apache.spark.sql.functions;
import scala.Function1;
import scala.Tuple3;
import scala.collection.immutable.Seq;
import scala.runtime.BoxedUnit;

/**
 * Session extensions ({@code spark.sql.extensions}) that give every session of the server the
 * jar's aggregate {@code cdclake_key_counts} ({@link KeyCounts}), so that a Spark Connect client,
 * which has no JVM of its own to register it from, can call it.
 *
 * <p>It is built as Spark builds a registered {@code Aggregator}: a {@code ScalaAggregator} over the
 * call's arguments. (As a catalog function it would run as a {@code V2Aggregator}, whose input
 * projection Spark cannot serialize in {@code Dataset.observe}'s accumulator.)
 */
public final class Extensions implements Function1<SparkSessionExtensions, BoxedUnit> {
    /** The aggregate's name in every session. */
    public static final String KEY_COUNTS = "cdclake_key_counts";

    @Override
    @SuppressWarnings("unchecked")
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        UserDefinedAggregator<String, ?, String> counts =
                (UserDefinedAggregator<String, ?, String>) functions.udaf(new KeyCounts(), Encoders.STRING());
        Function1<Seq<Expression>, Expression> builder =
                children -> ScalaAggregator$.MODULE$.apply(counts, children);
        extensions.injectFunction(new Tuple3<>(
                FunctionIdentifier.apply(KEY_COUNTS),
                new ExpressionInfo(KeyCounts.class.getName(), KEY_COUNTS),
                builder));
        return BoxedUnit.UNIT;
    }
}
