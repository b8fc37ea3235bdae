package rspark.jvm;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.api.java.UDF0;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;

/**
 * A long value that a plan reads as a parameter rather than as a literal: a Spark UDF without arguments that gives
 * {@code value}.
 *
 * <p>Spark writes a long literal into the Java code it generates for a plan, so two plans that differ only in a
 * literal compile two classes (Janino, tens of milliseconds each). A live query's plan is built anew at every
 * evaluation, with that evaluation's window bounds and instant: as literals, every evaluation compiled its
 * filter's and its aggregate's code again, in the tasks and on the driver. The UDF's function object, which holds
 * the value, is passed to the generated code as a reference, so the code is the same from one evaluation to the next
 * and Spark's cache of compiled classes serves it (rspark.spark.streaming.windows, parameters).
 */
public final class LongParameter implements UDF0<Long> {
    private static final long serialVersionUID = 1L;

    private final long value;

    public LongParameter(long value) {
        this.value = value;
    }

    @Override
    public Long call() {
        return value;
    }

    /** {@code value} as a column whose generated code does not hold it (never null). */
    public static Column column(long value) {
        return functions.udf(new LongParameter(value), DataTypes.LongType).asNonNullable().apply(new Column[0]);
    }
}
