package rspark.jvm;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeMap$;
import org.apache.spark.sql.catalyst.plans.logical.Statistics;
import org.apache.spark.sql.catalyst.plans.physical.Partitioning;
import org.apache.spark.sql.catalyst.plans.physical.SinglePartition$;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.LogicalRDD;
import org.apache.spark.sql.execution.arrow.ArrowConverters$;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

import scala.Option;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.math.BigInt;

/**
 * A DataFrame of Arrow record batches sent by the Python driver, as a scan of an RDD holding the batches (one
 * partition per batch, decoded where the task runs), whatever their size.
 *
 * <p>PySpark's createDataFrame of an Arrow table makes a LocalRelation below
 * spark.sql.execution.arrow.localRelationThreshold (48 MB): a plan node holding every row, which Catalyst hashes and
 * compares row by row whenever it deduplicates or compares plans (a union of a window's instants, a self-join of two
 * triple patterns over the same buffer) and which the optimizer evaluates on the driver. A live buffer of 600,000
 * quads took 4.4 s to analyse a union of six filters of it and 14 s to run it that way, against 0.03 s and 0.6 s as a
 * scan of the batches (rspark.engine.live.buffer). This is the branch of ArrowConverters.toDataFrame that Spark takes
 * above the threshold, taken always, with the statistics a local relation would have had.
 */
public final class ArrowFrames {
    private ArrowFrames() {
    }

    /**
     * The DataFrame of {@code batches} (Arrow IPC record batches of the schema {@code schemaJson}, Spark's JSON) holding
     * {@code rows} rows, with that row count and the batches' size as its statistics (the planner's join choices see
     * its size as they saw a local relation's).
     */
    public static Dataset<Row> toDataFrame(scala.collection.Iterator<byte[]> batches, String schemaJson,
                                          SparkSession session, long rows) {
        StructType schema = (StructType) DataType.fromJson(schemaJson);
        List<byte[]> list = new ArrayList<>();
        long bytes = 0;
        while (batches.hasNext()) {
            byte[] batch = batches.next();
            bytes += batch.length;
            list.add(batch);
        }
        SQLConf conf = session.sessionState().conf();
        String timeZone = conf.sessionLocalTimeZone();
        boolean largeVarTypes = conf.arrowUseLargeVarTypes();
        JavaRDD<byte[]> raw = JavaSparkContext.fromSparkContext(session.sparkContext())
            .parallelize(list, Math.max(1, list.size()));
        RDD<InternalRow> decoded = raw.mapPartitions(part -> CollectionConverters.asJava(
            ArrowConverters$.MODULE$.fromBatchIterator(CollectionConverters.asScala(part), schema, timeZone, false,
                largeVarTypes, TaskContext.get()))).rdd().setName("arrow");
        Seq<Attribute> output = toAttributes(schema);
        Statistics stats = new Statistics(BigInt.apply(Math.max(1L, bytes)), Option.apply(BigInt.apply(rows)),
            AttributeMap$.MODULE$.empty(), false);
        // one batch, one partition: said so, a grouping or a DISTINCT over it needs no shuffle (EnsureRequirements
        // finds its distribution satisfied), and a live window's evaluation runs as one task
        Partitioning partitioning = list.size() <= 1 ? SinglePartition$.MODULE$
            : LogicalRDD.$lessinit$greater$default$3();
        LogicalRDD plan = new LogicalRDD(output, decoded, partitioning,
            LogicalRDD.$lessinit$greater$default$4(), false, LogicalRDD.$lessinit$greater$default$6(), session,
            Option.apply(stats), Option.empty(), false);
        return Dataset.ofRows(session, plan);
    }

    @SuppressWarnings("unchecked")
    private static Seq<Attribute> toAttributes(StructType schema) {
        return (Seq<Attribute>) (Seq<?>) DataTypeUtils.toAttributes(schema);
    }
}
