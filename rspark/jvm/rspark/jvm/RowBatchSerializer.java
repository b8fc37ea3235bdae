package rspark.jvm;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BinaryComparison;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThan;
import org.apache.spark.sql.catalyst.expressions.GreaterThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.LessThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Or;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.columnar.CachedBatch;
import org.apache.spark.sql.columnar.CachedBatchSerializer;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.ByteType$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.IntegerType$;
import org.apache.spark.sql.types.LongType$;
import org.apache.spark.sql.types.ShortType$;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.storage.StorageLevel;
import org.apache.spark.unsafe.Platform;

import scala.Function2;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction2;

/**
 * Spark's cache (DataFrame.persist) as batches of rows in Spark's own binary row format, rather than as columns.
 *
 * <p>Spark's default cache serializer builds a column per attribute for every batch of rows and keeps each column's
 * lower and upper bound, which for a string column is a byte-wise comparison of every value with the bounds so far.
 * rspark caches every stream it loads: quads of four string columns and a few numbers, read whole by the queries
 * that follow. Building those columns cost more than reading and cutting the file's lines. Here a batch is the rows'
 * bytes copied one after another (a row arrives in that format from the plan being cached, so caching a row is one
 * copy), and reading a batch back points a row at each of them; a selection of some columns is one projection.
 *
 * <p>Batches keep the least and greatest value and the null count of their integer columns only (int, long, short,
 * byte), and a scan skips the batches that no row of can satisfy its filters on those columns (a comparison of the
 * column with a constant, IN, IS [NOT] NULL, AND and OR of such): a loaded stream's rows are of several kinds told
 * apart by an integer column, each kind in a run of batches, and a projection of one kind reads its batches only.
 * Filters on other columns keep every batch (the filter itself is applied above the scan in any case).
 *
 * <p>Set as {@code spark.sql.cache.serializer} (a static setting of the session) by rspark's session when its JVM
 * helpers are built.
 */
public final class RowBatchSerializer implements CachedBatchSerializer {
    private static final long serialVersionUID = 1L;

    /** A batch closes at this many bytes of rows (or at spark.sql.inMemoryColumnarStorage.batchSize rows). */
    static final int BATCH_BYTES = 1 << 18;

    /** A cached batch: its rows' bytes (each preceded by its length) and the bounds of its integer columns. */
    static final class RowBatch implements CachedBatch, Serializable {
        private static final long serialVersionUID = 1L;
        final int rows;
        final byte[] data;
        final long[] lo;
        final long[] hi;
        final int[] nulls;

        RowBatch(int rows, byte[] data, long[] lo, long[] hi, int[] nulls) {
            this.rows = rows;
            this.data = data;
            this.lo = lo;
            this.hi = hi;
            this.nulls = nulls;
        }

        @Override
        public int numRows() {
            return rows;
        }

        @Override
        public long sizeInBytes() {
            return data.length;
        }
    }

    private static boolean integral(DataType t) {
        return t == IntegerType$.MODULE$ || t == LongType$.MODULE$ || t == ShortType$.MODULE$
            || t == ByteType$.MODULE$;
    }

    private static long integralAt(UnsafeRow row, int i, DataType t) {
        if (t == LongType$.MODULE$) {
            return row.getLong(i);
        }
        if (t == IntegerType$.MODULE$) {
            return row.getInt(i);
        }
        if (t == ShortType$.MODULE$) {
            return row.getShort(i);
        }
        return row.getByte(i);
    }

    @Override
    public boolean supportsColumnarInput(Seq<Attribute> schema) {
        return false;
    }

    @Override
    public RDD<CachedBatch> convertInternalRowToCachedBatch(RDD<InternalRow> input, Seq<Attribute> schema,
                                                            StorageLevel storageLevel, SQLConf conf) {
        StructType struct = DataTypeUtils.fromAttributes(schema);
        int maxRows = Math.max(1, conf.columnBatchSize());
        return input.toJavaRDD().mapPartitions(rows -> new Batcher(rows, struct, maxRows)).rdd();
    }

    /** Cuts a partition's rows into batches. */
    private static final class Batcher implements Iterator<CachedBatch> {
        private final Iterator<InternalRow> rows;
        private final StructType schema;
        private final DataType[] types;  // a column's type, null for a column without bounds (not an integer)
        private final int maxRows;
        private UnsafeProjection toUnsafe;
        private byte[] buffer = new byte[BATCH_BYTES + 1024];

        Batcher(Iterator<InternalRow> rows, StructType schema, int maxRows) {
            this.rows = rows;
            this.schema = schema;
            this.maxRows = maxRows;
            types = new DataType[schema.length()];
            for (int i = 0; i < types.length; i++) {
                DataType t = schema.fields()[i].dataType();
                types[i] = integral(t) ? t : null;
            }
        }

        @Override
        public boolean hasNext() {
            return rows.hasNext();
        }

        @Override
        public CachedBatch next() {
            if (!rows.hasNext()) {
                throw new NoSuchElementException();
            }
            int n = types.length;
            long[] lo = new long[n];
            long[] hi = new long[n];
            int[] nulls = new int[n];
            Arrays.fill(lo, Long.MAX_VALUE);
            Arrays.fill(hi, Long.MIN_VALUE);
            int count = 0;
            int pos = 0;
            while (count < maxRows && pos < BATCH_BYTES && rows.hasNext()) {
                InternalRow r = rows.next();
                UnsafeRow row;
                if (r instanceof UnsafeRow) {
                    row = (UnsafeRow) r;
                } else {
                    if (toUnsafe == null) {
                        toUnsafe = UnsafeProjection.create(schema);
                    }
                    row = toUnsafe.apply(r);
                }
                int size = row.getSizeInBytes();
                if (pos + 4 + size > buffer.length) {
                    buffer = Arrays.copyOf(buffer, Math.max(buffer.length * 2, pos + 4 + size));
                }
                Platform.putInt(buffer, Platform.BYTE_ARRAY_OFFSET + pos, size);
                row.writeToMemory(buffer, Platform.BYTE_ARRAY_OFFSET + pos + 4);
                pos += 4 + size;
                count++;
                for (int i = 0; i < n; i++) {
                    if (row.isNullAt(i)) {
                        nulls[i]++;
                    } else if (types[i] != null) {
                        long v = integralAt(row, i, types[i]);
                        if (v < lo[i]) {
                            lo[i] = v;
                        }
                        if (v > hi[i]) {
                            hi[i] = v;
                        }
                    }
                }
            }
            byte[] data = Arrays.copyOf(buffer, pos);
            if (buffer.length > 4 * (BATCH_BYTES + 1024)) {
                buffer = new byte[BATCH_BYTES + 1024];  // one huge row does not keep a huge buffer
            }
            return new RowBatch(count, data, lo, hi, nulls);
        }
    }

    @Override
    public RDD<CachedBatch> convertColumnarBatchToCachedBatch(RDD<ColumnarBatch> input, Seq<Attribute> schema,
                                                              StorageLevel storageLevel, SQLConf conf) {
        throw new UnsupportedOperationException("rspark's row cache takes rows only (supportsColumnarInput is false)");
    }

    @Override
    public boolean supportsColumnarOutput(StructType schema) {
        return false;
    }

    @Override
    public RDD<ColumnarBatch> convertCachedBatchToColumnarBatch(RDD<CachedBatch> input, Seq<Attribute> cacheAttributes,
                                                                Seq<Attribute> selectedAttributes, SQLConf conf) {
        throw new UnsupportedOperationException("rspark's row cache gives rows only (supportsColumnarOutput is false)");
    }

    private static int indexOf(List<Attribute> attributes, Attribute a) {
        for (int i = 0; i < attributes.size(); i++) {
            if (attributes.get(i).exprId().equals(a.exprId())) {
                return i;
            }
        }
        return -1;
    }

    @Override
    public RDD<InternalRow> convertCachedBatchToInternalRow(RDD<CachedBatch> input, Seq<Attribute> cacheAttributes,
                                                            Seq<Attribute> selectedAttributes, SQLConf conf) {
        List<Attribute> cached = CollectionConverters.asJava(cacheAttributes);
        List<Attribute> selected = CollectionConverters.asJava(selectedAttributes);
        int fields = cached.size();
        int[] ordinals = new int[selected.size()];
        DataType[] types = new DataType[selected.size()];
        boolean[] nullable = new boolean[selected.size()];
        boolean whole = selected.size() == fields;
        for (int i = 0; i < ordinals.length; i++) {
            int at = indexOf(cached, selected.get(i));
            if (at < 0) {
                throw new IllegalArgumentException("column " + selected.get(i) + " is not in the cache " + cached);
            }
            ordinals[i] = at;
            types[i] = cached.get(at).dataType();
            nullable[i] = cached.get(at).nullable();
            whole &= at == i;
        }
        boolean identity = whole;
        return input.toJavaRDD().mapPartitions(batches -> {
            UnsafeProjection projection = null;
            if (!identity) {
                List<Expression> refs = new ArrayList<>();
                for (int i = 0; i < ordinals.length; i++) {
                    refs.add(new BoundReference(ordinals[i], types[i], nullable[i]));
                }
                projection = UnsafeProjection.create(CollectionConverters.asScala(refs).toSeq());
            }
            return new RowReader(batches, fields, projection);
        }).rdd();
    }

    /** The rows of a partition's batches, each a row pointed at its bytes (projected to the selected columns). */
    private static final class RowReader implements Iterator<InternalRow> {
        private final Iterator<CachedBatch> batches;
        private final UnsafeRow row;
        private final UnsafeProjection projection;
        private byte[] data;
        private int pos;
        private int end;

        RowReader(Iterator<CachedBatch> batches, int fields, UnsafeProjection projection) {
            this.batches = batches;
            this.row = new UnsafeRow(fields);
            this.projection = projection;
        }

        @Override
        public boolean hasNext() {
            while (data == null || pos >= end) {
                if (!batches.hasNext()) {
                    return false;
                }
                data = ((RowBatch) batches.next()).data;
                pos = 0;
                end = data.length;
            }
            return true;
        }

        @Override
        public InternalRow next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            int size = Platform.getInt(data, Platform.BYTE_ARRAY_OFFSET + pos);
            row.pointTo(data, Platform.BYTE_ARRAY_OFFSET + pos + 4, size);
            pos += 4 + size;
            return projection == null ? row : projection.apply(row);
        }
    }

    // ------------------------------------------------------------------------------------------ skipping batches

    /** Whether a batch may hold a row satisfying a filter (false only when none can). */
    interface Test extends Serializable {
        boolean mayMatch(RowBatch batch);
    }

    @Override
    public Function2<Object, scala.collection.Iterator<CachedBatch>, scala.collection.Iterator<CachedBatch>> buildFilter(
            Seq<Expression> predicates, Seq<Attribute> cachedAttributes) {
        List<Attribute> cached = CollectionConverters.asJava(cachedAttributes);
        List<Test> tests = new ArrayList<>();
        for (Expression p : CollectionConverters.asJava(predicates)) {
            Test t = test(p, cached);
            if (t != null) {
                tests.add(t);
            }
        }
        return new Skipper(tests.toArray(new Test[0]));
    }

    /** The batches of a partition minus those no row of which can satisfy the scan's filters. */
    static final class Skipper extends AbstractFunction2<Object, scala.collection.Iterator<CachedBatch>,
            scala.collection.Iterator<CachedBatch>> implements Serializable {
        private static final long serialVersionUID = 1L;
        private final Test[] tests;

        Skipper(Test[] tests) {
            this.tests = tests;
        }

        @Override
        public scala.collection.Iterator<CachedBatch> apply(Object partition, scala.collection.Iterator<CachedBatch> in) {
            if (tests.length == 0) {
                return in;
            }
            Iterator<CachedBatch> batches = CollectionConverters.asJava(in);
            Iterator<CachedBatch> kept = new Iterator<>() {
                private CachedBatch next;

                @Override
                public boolean hasNext() {
                    while (next == null && batches.hasNext()) {
                        CachedBatch b = batches.next();
                        if (b instanceof RowBatch && !matches((RowBatch) b)) {
                            continue;
                        }
                        next = b;
                    }
                    return next != null;
                }

                @Override
                public CachedBatch next() {
                    if (!hasNext()) {
                        throw new NoSuchElementException();
                    }
                    CachedBatch b = next;
                    next = null;
                    return b;
                }
            };
            return CollectionConverters.asScala(kept);
        }

        private boolean matches(RowBatch b) {
            for (Test t : tests) {
                if (!t.mayMatch(b)) {
                    return false;
                }
            }
            return true;
        }
    }

    /** The test of a predicate on the batches' bounds, or null when the bounds cannot tell (keep every batch). */
    static Test test(Expression e, List<Attribute> cached) {
        if (e instanceof Literal) {
            Literal l = (Literal) e;
            return Boolean.FALSE.equals(l.value()) || l.value() == null ? b -> false : null;
        }
        if (e instanceof And) {
            Test l = test(((And) e).left(), cached);
            Test r = test(((And) e).right(), cached);
            if (l == null) {
                return r;
            }
            return r == null ? l : b -> l.mayMatch(b) && r.mayMatch(b);
        }
        if (e instanceof Or) {
            Test l = test(((Or) e).left(), cached);
            Test r = test(((Or) e).right(), cached);
            return l == null || r == null ? null : b -> l.mayMatch(b) || r.mayMatch(b);
        }
        if (e instanceof IsNull || e instanceof IsNotNull) {
            int i = column(e.children().head(), cached);
            if (i < 0) {
                return null;
            }
            boolean isNull = e instanceof IsNull;
            return b -> isNull ? b.nulls[i] > 0 : b.nulls[i] < b.rows;
        }
        if (e instanceof In) {
            In in = (In) e;
            int i = integralColumn(in.value(), cached);
            if (i < 0) {
                return null;
            }
            List<Expression> list = CollectionConverters.asJava(in.list());
            long[] values = new long[list.size()];
            for (int j = 0; j < values.length; j++) {
                Long v = integralLiteral(list.get(j), in.value().dataType());
                if (v == null) {
                    return null;
                }
                values[j] = v;
            }
            return b -> {
                for (long v : values) {
                    if (b.lo[i] <= v && v <= b.hi[i]) {
                        return true;
                    }
                }
                return false;
            };
        }
        if (e instanceof BinaryComparison) {
            BinaryComparison c = (BinaryComparison) e;
            int i = integralColumn(c.left(), cached);
            Long v = i >= 0 ? integralLiteral(c.right(), c.left().dataType()) : null;
            boolean flipped = false;
            if (v == null) {
                i = integralColumn(c.right(), cached);
                v = i >= 0 ? integralLiteral(c.left(), c.right().dataType()) : null;
                flipped = true;
            }
            if (v == null) {
                return null;
            }
            return comparison(c, i, v, flipped);
        }
        return null;
    }

    /** column OP value (column on the left; flipped: value OP column) may hold for some row of a batch. An empty
     * range (lo > hi: no non-null value) fails every comparison, as a null compares to nothing. */
    private static Test comparison(BinaryComparison c, int i, long v, boolean flipped) {
        if (c instanceof EqualTo || c instanceof EqualNullSafe) {
            return b -> b.lo[i] <= v && v <= b.hi[i];
        }
        // v < col is col > v, and so on
        boolean lt = flipped ? c instanceof GreaterThan : c instanceof LessThan;
        boolean le = flipped ? c instanceof GreaterThanOrEqual : c instanceof LessThanOrEqual;
        boolean gt = flipped ? c instanceof LessThan : c instanceof GreaterThan;
        boolean ge = flipped ? c instanceof LessThanOrEqual : c instanceof GreaterThanOrEqual;
        if (lt) {
            return b -> b.lo[i] <= b.hi[i] && b.lo[i] < v;
        }
        if (le) {
            return b -> b.lo[i] <= b.hi[i] && b.lo[i] <= v;
        }
        if (gt) {
            return b -> b.lo[i] <= b.hi[i] && b.hi[i] > v;
        }
        if (ge) {
            return b -> b.lo[i] <= b.hi[i] && b.hi[i] >= v;
        }
        return null;
    }

    private static int column(Expression e, List<Attribute> cached) {
        return e instanceof AttributeReference ? indexOf(cached, (Attribute) e) : -1;
    }

    private static int integralColumn(Expression e, List<Attribute> cached) {
        int i = column(e, cached);
        return i >= 0 && integral(cached.get(i).dataType()) ? i : -1;
    }

    private static Long integralLiteral(Expression e, DataType type) {
        if (!(e instanceof Literal) || !((Literal) e).dataType().equals(type)) {
            return null;
        }
        Object v = ((Literal) e).value();
        return v instanceof Number ? ((Number) v).longValue() : null;
    }
}
