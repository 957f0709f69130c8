package cdclake.jvm;

import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.connector.catalog.FunctionCatalog;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A Spark function catalog that holds the jar's functions ({@link FastDecode}), set up by
 * {@link FastDecode#register} as {@code spark.sql.catalog.<name>}; its functions have no
 * namespace ({@code <name>.fast_decode}).
 */
public final class Functions implements FunctionCatalog {
    private String name;

    @Override
    public void initialize(String catalogName, CaseInsensitiveStringMap options) {
        this.name = catalogName;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Identifier[] listFunctions(String[] namespace) {
        return namespace.length == 0 ? new Identifier[] {Identifier.of(namespace, FastDecode.NAME)}
                : new Identifier[0];
    }

    @Override
    public UnboundFunction loadFunction(Identifier ident) throws NoSuchFunctionException {
        if (ident.namespace().length == 0 && ident.name().equalsIgnoreCase(FastDecode.NAME)) {
            return new FastDecode();
        }
        throw new NoSuchFunctionException(ident);
    }
}
