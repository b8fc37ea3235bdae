package rspark.jvm;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.Serializable;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.XXH64;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A Spark data source (DataSource V2) that reads a local N-Triples / N-Quads file and cuts its lines with
 * {@link NQuadsLine}'s scanner straight from the file's bytes: the rows the loader's text source and line-scanner
 * UDF give together, without the UDF's conversions (each line decoded into a Java String, four term Strings out,
 * a Row converted back into Spark's UTF8Strings).
 *
 * <p>Options: {@code path} (a local file), {@code splitBytes} (the size of an input split), {@code quads}
 * ("true" for N-Quads), {@code prefix} (the blank-node prefix, "_:b1234abcd_"), {@code mode}:
 * <ul>
 *   <li>"rows": one row per line with something to read: {@code s, p, o, g} (g "" when the line has no graph) when
 *   the scanner reads it, else {@code value} (the line's text, for the Python path); {@code blk} the first byte of
 *   its split, {@code idx} its index among the split's lines, NULL for a line the scanner reads whose graph is that
 *   of the line it read before in the split (a run of one element's statements: only the run's first line can be
 *   the element's first, which is all the loader asks of these positions). Blank lines and comments give no
 *   row.</li>
 *   <li>"count": one row per split, {@code blk} and {@code n}, its number of lines (to turn positions into line
 *   numbers).</li>
 *   <li>"stream": a stream file's statements with their element's timestamp and position, its elements, metadata
 *   and a summary per split, in one pass, with {@code pred} the timestamp predicate ({@link StreamReader}).</li>
 * </ul>
 * A split [start, end) holds the lines that begin in it; lines end at "\n", "\r\n" or "\r" (as Hadoop's line
 * reader has them), and a UTF-8 byte order mark at the start of the file is skipped. A line of ASCII characters is
 * scanned as it is in the file; any other line is decoded as UTF-8 (invalid bytes replaced by U+FFFD, which the
 * scanner leaves to Python) and scanned as a String, as the UDF scans it.
 */
public final class NQuadsSource implements TableProvider {

    static final StructType ROWS = new StructType()
            .add("s", DataTypes.StringType).add("p", DataTypes.StringType).add("o", DataTypes.StringType)
            .add("g", DataTypes.StringType).add("value", DataTypes.StringType)
            .add("blk", DataTypes.LongType, false).add("idx", DataTypes.LongType, true);
    static final StructType COUNT = new StructType()
            .add("blk", DataTypes.LongType, false).add("n", DataTypes.LongType, false);
    static final StructType STREAM = new StructType()
            .add("k", DataTypes.ByteType, false)
            .add("s", DataTypes.StringType).add("p", DataTypes.StringType).add("o", DataTypes.StringType)
            .add("element", DataTypes.StringType).add("ts", DataTypes.LongType).add("seq", DataTypes.LongType)
            .add("h", DataTypes.BinaryType);

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        String mode = options.get("mode");
        return "count".equals(mode) ? COUNT : "stream".equals(mode) ? STREAM : ROWS;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new LinesTable(schema);
    }

    /** The file as a table: read once per scan, with the scan's options. */
    static final class LinesTable implements Table, SupportsRead {
        private final StructType schema;

        LinesTable(StructType schema) {
            this.schema = schema;
        }

        @Override
        public String name() {
            return "rspark_nquads";
        }

        @Override
        public StructType schema() {
            return schema;
        }

        @Override
        public Set<TableCapability> capabilities() {
            return EnumSet.of(TableCapability.BATCH_READ);
        }

        @Override
        public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
            Options o = new Options(options);
            return () -> new LinesScan(schema, o);
        }
    }

    /** The options a reader needs, serialisable for the executors. */
    static final class Options implements Serializable {
        private static final long serialVersionUID = 1L;
        final String path;
        final long splitBytes;
        final boolean quads;
        final String prefix;
        final boolean count;
        final boolean stream;
        final String pred;
        final int pending;

        Options(CaseInsensitiveStringMap options) {
            path = options.get("path");
            if (path == null) {
                throw new IllegalArgumentException("rspark's N-Quads source needs a path");
            }
            splitBytes = Math.max(1L, options.getLong("splitBytes", 128L << 20));
            quads = options.getBoolean("quads", true);
            prefix = options.getOrDefault("prefix", "_:b_");
            count = "count".equals(options.get("mode"));
            stream = "stream".equals(options.get("mode"));
            pred = options.get("pred");
            if (stream && pred == null) {
                throw new IllegalArgumentException("rspark's N-Quads source needs the timestamp predicate (pred) "
                        + "in mode stream");
            }
            pending = options.getInt("pending", 1 << 16);
        }
    }

    static final class LinesScan implements Scan, Batch {
        private final StructType schema;
        private final Options options;

        LinesScan(StructType schema, Options options) {
            this.schema = schema;
            this.options = options;
        }

        @Override
        public StructType readSchema() {
            return schema;
        }

        @Override
        public String description() {
            return "rspark N-Quads lines " + options.path;
        }

        @Override
        public Batch toBatch() {
            return this;
        }

        @Override
        public InputPartition[] planInputPartitions() {
            long size;
            try (RandomAccessFile file = new RandomAccessFile(options.path, "r")) {
                size = file.length();
            } catch (IOException e) {
                throw new IllegalArgumentException("cannot read " + options.path + ": " + e.getMessage(), e);
            }
            List<InputPartition> splits = new ArrayList<>();
            for (long start = 0; start < size; start += options.splitBytes) {
                splits.add(new Split(start, Math.min(size, start + options.splitBytes)));
            }
            if (splits.isEmpty()) {
                splits.add(new Split(0, 0));
            }
            return splits.toArray(new InputPartition[0]);
        }

        @Override
        public PartitionReaderFactory createReaderFactory() {
            return new Factory(options);
        }
    }

    /** Bytes [start, end) of the file: the lines that begin there. */
    static final class Split implements InputPartition {
        private static final long serialVersionUID = 1L;
        final long start;
        final long end;

        Split(long start, long end) {
            this.start = start;
            this.end = end;
        }
    }

    static final class Factory implements PartitionReaderFactory {
        private static final long serialVersionUID = 1L;
        private final Options options;

        Factory(Options options) {
            this.options = options;
        }

        @Override
        public PartitionReader<InternalRow> createReader(InputPartition partition) {
            Split split = (Split) partition;
            try {
                return options.stream ? new StreamReader(options, split.start, split.end)
                        : new LineReader(options, split.start, split.end);
            } catch (IOException e) {
                throw new IllegalStateException("cannot read " + options.path + ": " + e.getMessage(), e);
            }
        }
    }

    /** The ASCII bytes of one line as a CharSequence (what the scanner reads). */
    static final class AsciiLine implements CharSequence {
        byte[] bytes;
        int offset;
        int length;

        @Override
        public int length() {
            return length;
        }

        @Override
        public char charAt(int i) {
            return (char) bytes[offset + i];
        }

        @Override
        public CharSequence subSequence(int from, int to) {
            return new String(bytes, offset + from, to - from, StandardCharsets.ISO_8859_1);
        }

        @Override
        public String toString() {
            return new String(bytes, offset, length, StandardCharsets.ISO_8859_1);
        }

        /** Whether the ASCII string t, which starts with '"', occurs in the line: a test at each quote, whose
         *  positions the reader noted while it checked the line for non-ASCII bytes (lines have few quotes). */
        boolean contains(String t) {
            for (int q = 0; q < quotes; q++) {
                int at = offset + quote[q];
                if (at + t.length() > offset + length) {
                    continue;
                }
                int k = 1;
                while (k < t.length() && bytes[at + k] == t.charAt(k)) {
                    k++;
                }
                if (k == t.length()) {
                    return true;
                }
            }
            return false;
        }

        /** Records a quote at index i of the line. */
        void quote(int i) {
            if (quotes == quote.length) {
                quote = java.util.Arrays.copyOf(quote, quotes * 2);
            }
            quote[quotes++] = i;
        }

        int[] quote = new int[8];
        int quotes;
    }

    /**
     * Reads the lines of one split. The file is read in chunks into a buffer that is never written again once a
     * row refers to it (a chunk that does not end a line is continued in a fresh buffer), so the rows' strings
     * point into it without copies.
     */
    static class LineReader implements PartitionReader<InternalRow> {
        private static final int CHUNK = 1 << 20;
        // a byte array read eight bytes at a time, as longs (the first byte the lowest), and the masks that test
        // the eight bytes at once
        private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class,
                ByteOrder.LITTLE_ENDIAN);
        private static final long LOW_7_BITS = 0x7F7F7F7F7F7F7F7FL;
        private static final long HIGH_BITS = 0x8080808080808080L;
        private static final long QUOTES = 0x2222222222222222L;
        private static final long LINE_FEEDS = 0x0A0A0A0A0A0A0A0AL;
        private static final long CARRIAGE_RETURNS = 0x0D0D0D0D0D0D0D0DL;

        /** The high bit of each byte of v that is 0, and no other bit. */
        static long zeroBytes(long v) {
            long y = (v & LOW_7_BITS) + LOW_7_BITS;
            return ~(y | v | LOW_7_BITS);
        }

        /** The index of the first '\n' or '\r' of bytes[from, limit), else limit. */
        static int endOfLine(byte[] bytes, int from, int limit) {
            int t = from;
            for (; t + 8 <= limit; t += 8) {
                long v = (long) LONGS.get(bytes, t);
                long ends = zeroBytes(v ^ LINE_FEEDS) | zeroBytes(v ^ CARRIAGE_RETURNS);
                if (ends != 0) {
                    return t + (Long.numberOfTrailingZeros(ends) >>> 3);
                }
            }
            while (t < limit && bytes[t] != '\n' && bytes[t] != '\r') {
                t++;
            }
            return t;
        }

        final RandomAccessFile file;
        final Options options;
        final long start;
        final long end;
        final UTF8String prefix;
        final String prefixText;
        final AsciiLine ascii = new AsciiLine();
        final NQuadsLine.IriMemo iris = new NQuadsLine.IriMemo();
        final int[] at = new int[8];
        byte[] buf = new byte[0];
        int pos;          // next unread byte of buf
        int limit;        // bytes of buf filled
        long bufStart;    // the file offset of buf[0]
        boolean eof;
        private long idx = -1;    // the index of the current line in the split
        boolean done;
        InternalRow row;
        private UTF8String lastGraph;  // the graph of the last line read in this split (null: none)
        // the line readLine() read: buf[lineStart, lineEnd), at lineAt in the file
        int lineStart;
        int lineEnd;
        long lineAt;
        String decoded;  // the line as a String when scan() found it is not ASCII, else null

        LineReader(Options options, long start, long end) throws IOException {
            this.options = options;
            this.start = start;
            this.end = end;
            this.prefix = UTF8String.fromString(options.prefix);
            this.prefixText = options.prefix;
            this.file = new RandomAccessFile(options.path, "r");
            long from = Math.max(0, start - 1);  // the byte before the split tells whether a line begins at start
            file.seek(from);
            bufStart = from;
            fill();
            if (start == 0) {
                if (limit >= 3 && buf[0] == (byte) 0xEF && buf[1] == (byte) 0xBB && buf[2] == (byte) 0xBF) {
                    pos = 3;
                }
            } else {
                skipToLineStart();
            }
        }

        /** Reads more of the file into a fresh buffer holding the unread bytes first; false at the end of the file. */
        private boolean fill() throws IOException {
            if (eof) {
                return false;
            }
            int rest = limit - pos;
            byte[] next = new byte[Math.max(CHUNK, rest * 2)];
            System.arraycopy(buf, pos, next, 0, rest);
            bufStart += pos;
            int got = file.read(next, rest, next.length - rest);
            if (got <= 0) {
                eof = true;
                got = 0;
            }
            buf = next;
            pos = 0;
            limit = rest + got;
            return got > 0;
        }

        /** At the split's byte before its start: moves to the first line that begins at or after start. */
        private void skipToLineStart() throws IOException {
            // pos is at start - 1
            while (true) {
                if (pos + 1 >= limit && !fill()) {
                    pos = limit;  // the file ends: no line begins in this split
                    return;
                }
                if (pos + 1 >= limit) {
                    continue;
                }
                byte prev = buf[pos];
                byte cur = buf[pos + 1];
                pos++;
                if (prev == '\n' || (prev == '\r' && cur != '\n')) {
                    return;  // a line begins at pos
                }
            }
        }

        /** The file offset of the next unread line, or -1 at the end of the file. */
        final long nextLineAt() throws IOException {
            if (pos >= limit && !fill()) {
                return -1;
            }
            return bufStart + pos;
        }

        /** Reads the next line (nextLineAt() was not -1) into lineStart, lineEnd and lineAt. */
        final void readLine() throws IOException {
            // one line: [pos, t) with its terminator after it
            int t = pos;
            while (true) {
                t = endOfLine(buf, t, limit);
                if (t < limit || eof) {
                    break;
                }
                int offset = t - pos;
                if (!fill()) {
                    t = pos + offset;
                    break;
                }
                t = pos + offset;
            }
            if (t < limit && buf[t] == '\r' && t + 1 >= limit && !eof) {
                int offset = t - pos;
                fill();  // is the '\r' followed by '\n'?
                t = pos + offset;
            }
            lineStart = pos;
            lineEnd = t;
            lineAt = bufStart + pos;
            if (t < limit) {
                pos = (buf[t] == '\r' && t + 1 < limit && buf[t + 1] == '\n') ? t + 2 : t + 1;
            } else {
                pos = limit;
            }
        }

        @Override
        public boolean next() throws IOException {
            while (!done) {
                long next = nextLineAt();
                if (next < 0 || next >= end) {
                    done = true;  // the file ends, or the next line begins in the next split
                    break;
                }
                readLine();
                idx++;
                if (options.count) {
                    continue;
                }
                InternalRow r = read(lineStart, lineEnd);
                if (r != null) {
                    row = r;
                    return true;
                }
            }
            if (options.count && row == null) {
                row = new GenericInternalRow(new Object[] {start, idx + 1});
                return true;
            }
            return false;
        }

        /** Scans bytes[from, to) (a line): NQuadsLine.scan's answer, the terms' bounds in at; decoded is the line
         *  as a String when it is not ASCII (the bounds are then its chars'), else null. */
        final int scan(byte[] bytes, int from, int to) {
            boolean isAscii = true;
            ascii.quotes = 0;
            int i = from;
            for (; i + 8 <= to; i += 8) {  // eight bytes at a time
                long v = (long) LONGS.get(bytes, i);
                if ((v & HIGH_BITS) != 0) {
                    isAscii = false;
                    break;
                }
                for (long q = zeroBytes(v ^ QUOTES); q != 0; q &= q - 1) {
                    ascii.quote(i + (Long.numberOfTrailingZeros(q) >>> 3) - from);
                }
            }
            for (; isAscii && i < to; i++) {
                byte b = bytes[i];
                if (b < 0) {
                    isAscii = false;
                    break;
                }
                if (b == '"') {
                    ascii.quote(i - from);
                }
            }
            CharSequence text = ascii;
            decoded = null;
            if (isAscii) {
                ascii.bytes = bytes;
                ascii.offset = from;
                ascii.length = to - from;
            } else {
                decoded = new String(bytes, from, to - from, StandardCharsets.UTF_8);
                text = decoded;
            }
            return NQuadsLine.scan(text, options.quads, at, isAscii ? iris : null);
        }

        // the IRI memo's place of each term (s, p, o, g)
        private static final int[] SLOTS = {NQuadsLine.IriMemo.SUBJECT, NQuadsLine.IriMemo.PREDICATE,
            NQuadsLine.IriMemo.OBJECT, NQuadsLine.IriMemo.GRAPH};

        /** Term k (0 s, 1 p, 2 o, 3 g) of the line buf[from, ...) scan() read, "" for a missing graph. An IRI the
         *  memo holds is one value for all the lines that have it there (a copy: it holds no read buffer). */
        final UTF8String term(int from, int k) {
            int s = at[2 * k];
            int e = at[2 * k + 1];
            if (s < 0) {
                return UTF8String.EMPTY_UTF8;
            }
            if (decoded != null) {
                return UTF8String.fromString(NQuadsLine.term(decoded, s, e, prefixText));
            }
            int slot = SLOTS[k];
            int w = iris.hit[slot];
            if (w < 0) {
                return term(from, s, e);
            }
            UTF8String v = (UTF8String) iris.value(slot, w);
            if (v == null) {
                v = term(from, s, e).clone();
                iris.keep(slot, w, v);
            }
            return v;
        }

        /** The row of the line buf[from, to), or null when it has nothing to read. */
        private InternalRow read(int from, int to) {
            Object[] values = new Object[7];
            values[5] = start;
            values[6] = idx;
            int found = scan(buf, from, to);
            if (found == NQuadsLine.NOTHING_READ) {
                return null;
            }
            if (found == NQuadsLine.UNREAD) {
                values[4] = UTF8String.fromBytes(buf, from, to - from);
            } else {
                for (int k = 0; k < 4; k++) {  // s, p, o, g
                    values[k] = term(from, k);
                }
                UTF8String g = (UTF8String) values[3];
                if (g.numBytes() > 0 && g.equals(lastGraph)) {
                    values[6] = null;  // a line continuing a run of its graph's lines has no position
                }
                lastGraph = g;
            }
            return new GenericInternalRow(values);
        }

        private UTF8String term(int from, int s, int e) {
            if (buf[from + s] == '_') {
                return UTF8String.concat(prefix, UTF8String.fromBytes(buf, from + s + 2, e - s - 2));
            }
            return UTF8String.fromBytes(buf, from + s, e - s);
        }

        @Override
        public InternalRow get() {
            return row;
        }

        @Override
        public void close() throws IOException {
            file.close();
        }
    }

    /**
     * Mode "stream": a stream file's content in one pass, each element's timestamp attached in the scan. Rows
     * ({@link #STREAM}), by {@code k}: 0 a statement of a named graph with its element's timestamp and position
     * ({@code s, p, o, element, ts, seq}); 1 an element ({@code element, ts, seq}); 2 a metadata triple (a
     * default-graph triple other than an element's timestamp: {@code s, p, o}), these after the split's statements;
     * 3 the split's summary, its last row:
     * {@code ts} how many problems send the file to the general load (a line the scanner leaves to Python, a
     * timestamp that is not a canonical integer, an element with two timestamps), {@code seq} how many things this
     * pass cannot resolve within the split (an element without a timestamp here: its timestamp may be in another
     * split; more waiting statements than the option {@code pending} allows), {@code h} little-endian longs: the
     * split's counts ({@link #SUMMARY_HEADER} of them: its elements, their least and greatest timestamp, its
     * metadata triples, its statements), then the sorted XXH64 hashes of the names the split saw (graphs, and
     * subjects of timestamp triples): a name in two splits' lists may be resolved wrongly by each alone (the loader
     * then loads otherwise). The loader reads the summaries alone (a scan of the cache that skips the other rows'
     * batches), not every row of the split.
     *
     * <p>An element's {@code seq} is the file offset of its first statement, its {@code ts} the value of its
     * timestamp (a literal {@code "n"^^xsd:integer} or {@code xsd:long} of at most 17 digits, whose code, twice
     * the value plus one for xsd:long, is the same for equal terms). A statement waits in memory until its
     * element's timestamp is read (a timestamp triple usually follows its graph's statements).
     *
     * <p>Splits are cut at element boundaries: a line's key is its graph, or its subject in the default graph
     * (null for a line without terms or one the scanner leaves to Python); a split starts at the first line of its
     * byte range whose key differs from that of the line before (which it reads back), and reads on past its end
     * while the lines have the key of the last line that begins in its range. So an element written as one block of
     * lines (its statements and its timestamp together) is always read by one split.
     */
    static final class StreamReader extends LineReader {
        private static final byte CONTENT = 0;
        private static final byte ELEMENT = 1;
        private static final byte METADATA = 2;
        private static final byte SUMMARY = 3;
        /** The longs before the hashes in a summary's {@code h}: elements, least ts, greatest ts, metadata, statements. */
        static final int SUMMARY_HEADER = 5;
        static final long HASH_SEED = 0x5eed_2f5b_a77e_4e11L;
        private static final long NOT_PLAIN = Long.MIN_VALUE;
        private static final byte[] INTEGER = "\"^^<http://www.w3.org/2001/XMLSchema#integer>"
                .getBytes(StandardCharsets.US_ASCII);
        private static final byte[] LONG = "\"^^<http://www.w3.org/2001/XMLSchema#long>"
                .getBytes(StandardCharsets.US_ASCII);

        /** What the split knows of a name (a graph, or the subject of a timestamp triple). */
        static final class Name {
            final UTF8String name;
            long pos = -1;            // the offset of its first statement in a named graph (-1: none here)
            boolean stamped;          // a timestamp triple read
            long code;                // the first timestamp's code
            boolean conflict;         // another timestamp with another code
            List<UTF8String[]> pending;  // statements waiting for the timestamp
            List<UTF8String[]> stamps;   // its timestamp triples, while it has no statement in a named graph
            Long ts;                  // its ts and seq once resolved, boxed once for all its rows
            Long seq;
            boolean kept;             // in the map of names (else the name of the block being read, or retired)

            Name(UTF8String name) {
                this.name = name;
            }
        }

        private final UTF8String pred;
        // the names read whose element is not resolved yet (or that are no element: a timestamp without statements);
        // a resolved element's name is retired when its block of lines ends: its hash is kept, not the name
        private final Map<UTF8String, Name> names = new HashMap<>();
        private long[] retired = new long[1024];
        private int nRetired;
        private final ArrayDeque<InternalRow> out = new ArrayDeque<>();
        // the elements' and metadata rows, given after the statements: the cache's batches of statements hold
        // statements only, so that its statistics let a scan of the statements (or of the elements) skip the others
        private final ArrayDeque<InternalRow> tail = new ArrayDeque<>();
        private byte[] skipKey;     // the key of the line before the split's first line (null: none)
        private boolean started;    // past the lines of the block the split's range starts in
        private byte[] lastKey;     // the key of the last line read
        private Name last;          // the name of the last statement or timestamp read
        private long bad;
        private long unresolved;
        private long elements;
        private long lo = Long.MAX_VALUE;
        private long hi = Long.MIN_VALUE;
        private long metadata;
        private long statements;
        private int waiting;
        private boolean aborted;
        private boolean finished;

        StreamReader(Options options, long start, long end) throws IOException {
            super(options, start, end);
            pred = UTF8String.fromString(options.pred);
            long first = nextLineAt();
            if (start > 0 && first > 0) {
                skipKey = keyBefore(first);
            }
        }

        @Override
        public boolean next() throws IOException {
            while (out.isEmpty() && !finished) {
                step();
            }
            row = out.poll();
            return row != null;
        }

        private void step() throws IOException {
            long next = aborted ? -1 : nextLineAt();
            if (next < 0) {
                finish();
                return;
            }
            readLine();
            int found = scan(buf, lineStart, lineEnd);
            boolean keyed = found == NQuadsLine.READ;
            if (!started) {
                if (skipKey != null && keyed && sameKey(skipKey)) {
                    return;  // the block the previous split ends with
                }
                started = true;
            }
            boolean same = keyed && lastKey != null && sameKey(lastKey);
            if (next >= end && !same) {
                finish();  // the next split's first block
                return;
            }
            if (!same) {
                lastKey = keyed ? key(buf, lineStart) : null;
            }
            if (found == NQuadsLine.NOTHING_READ) {
                return;
            }
            if (found == NQuadsLine.UNREAD) {
                problem();
                return;
            }
            UTF8String s = term(lineStart, 0);
            UTF8String p = term(lineStart, 1);
            UTF8String o = term(lineStart, 2);
            UTF8String g = term(lineStart, 3);
            if (g.numBytes() > 0) {
                statement(s, p, o, g);
            } else if (p.equals(pred)) {
                stamp(s, p, o);
            } else {
                metadata++;
                tail.add(row(METADATA, s.clone(), p.clone(), o.clone(), null, null, null));
            }
        }

        private void statement(UTF8String s, UTF8String p, UTF8String o, UTF8String g) {
            Name n = name(g);
            if (n.pos < 0) {
                if (n.conflict) {
                    problem();  // an element with two timestamps
                    return;
                }
                n.pos = lineAt;
                n.stamps = null;  // its timestamp triples are no metadata
                if (n.stamped) {
                    resolved(n);
                }
            }
            if (n.stamped) {
                statements++;
                out.add(row(CONTENT, s, p, o, n.name, n.ts, n.seq));
                return;
            }
            if (n.pending == null) {
                n.pending = new ArrayList<>();
            }
            n.pending.add(new UTF8String[] {s, p, o});
            if (++waiting > options.pending) {
                unresolved++;
                aborted = true;
            }
        }

        private void stamp(UTF8String s, UTF8String p, UTF8String o) {
            long code = plainCode(o);
            if (code == NOT_PLAIN) {
                problem();  // another kind of timestamp: the general load reads it
                return;
            }
            Name n = name(s);
            if (!n.stamped) {
                n.stamped = true;
                n.code = code;
                if (n.pos >= 0) {
                    resolved(n);
                }
            } else if (n.code != code) {
                if (n.pos >= 0) {
                    problem();  // an element with two timestamps
                    return;
                }
                n.conflict = true;  // no element (yet): metadata
            }
            if (n.pos < 0) {
                if (n.stamps == null) {
                    n.stamps = new ArrayList<>(1);
                }
                n.stamps.add(new UTF8String[] {s.clone(), p.clone(), o.clone()});
            }
        }

        /** An element whose position and timestamp are known: its row, and its statements that waited. */
        private void resolved(Name n) {
            n.ts = n.code >> 1;
            n.seq = n.pos;
            elements++;
            lo = Math.min(lo, n.ts);
            hi = Math.max(hi, n.ts);
            tail.add(row(ELEMENT, null, null, null, n.name, n.ts, n.seq));
            if (n.pending != null) {
                statements += n.pending.size();
                for (UTF8String[] t : n.pending) {
                    out.add(row(CONTENT, t[0], t[1], t[2], n.name, n.ts, n.seq));
                }
                waiting -= n.pending.size();
                n.pending = null;
            }
        }

        /** The name {@code key}: the block's, a name read before whose element is not resolved, or a new one. A new
         * block's name sets the block before aside: retired (its hash kept) when its element is resolved, else
         * kept in the map. A retired name read again later in the split is a new name here; finish() then finds
         * its hash twice and has the file loaded otherwise. */
        private Name name(UTF8String key) {
            if (last != null && last.name.equals(key)) {
                return last;  // the name of the line before (an element's lines are usually together)
            }
            setAside(last);
            Name n = names.isEmpty() ? null : names.get(key);
            if (n == null) {
                n = new Name(key.clone());  // a copy: it outlives the buffer the key points into
            }
            last = n;
            return n;
        }

        /** The name of the block that ended: retired when its element is resolved, else kept in the map. */
        private void setAside(Name n) {
            if (n == null || n.kept) {
                return;
            }
            if (n.pos >= 0 && n.stamped) {
                if (nRetired == retired.length) {
                    retired = Arrays.copyOf(retired, 2 * nRetired);
                }
                retired[nRetired++] = XXH64.hashUTF8String(n.name, HASH_SEED);
            } else {
                n.kept = true;
                names.put(n.name, n);
            }
        }

        private void problem() {
            bad++;
            aborted = true;
        }

        private void finish() {
            if (finished) {
                return;
            }
            finished = true;
            long[] hashes = new long[0];
            if (!aborted) {
                setAside(last);
                last = null;
                hashes = Arrays.copyOf(retired, nRetired + names.size());
                int i = nRetired;
                for (Name n : names.values()) {
                    hashes[i++] = XXH64.hashUTF8String(n.name, HASH_SEED);
                    if (n.pos >= 0 && !n.stamped) {
                        unresolved++;  // no timestamp in this split
                    } else if (n.pos < 0) {
                        metadata += n.stamps.size();
                        for (UTF8String[] t : n.stamps) {
                            tail.add(row(METADATA, t[0], t[1], t[2], null, null, null));
                        }
                    }
                }
                Arrays.sort(hashes);
                for (int j = 1; j < hashes.length; j++) {
                    if (hashes[j] == hashes[j - 1]) {
                        unresolved++;  // a name read again after its element was resolved and set aside
                        break;
                    }
                }
            }
            retired = null;
            ByteBuffer bytes = ByteBuffer.allocate(8 * (SUMMARY_HEADER + hashes.length)).order(ByteOrder.LITTLE_ENDIAN);
            bytes.putLong(elements).putLong(lo).putLong(hi).putLong(metadata).putLong(statements);
            for (long h : hashes) {
                bytes.putLong(h);
            }
            names.clear();
            out.addAll(tail);
            tail.clear();
            out.add(new GenericInternalRow(new Object[] {SUMMARY, null, null, null, null, bad, unresolved,
                bytes.array()}));
        }

        private static InternalRow row(byte k, UTF8String s, UTF8String p, UTF8String o, UTF8String element,
                                       Long ts, Long seq) {
            return new GenericInternalRow(new Object[] {k, s, p, o, element, ts, seq, null});
        }

        /** Whether the line scan() just read from buf[lineStart, ...) has this key. */
        private boolean sameKey(byte[] key) {
            int k = at[6] >= 0 ? 3 : 0;
            if (decoded != null) {
                byte[] bytes = decoded.substring(at[2 * k], at[2 * k + 1]).getBytes(StandardCharsets.UTF_8);
                return Arrays.equals(key, bytes);
            }
            int s = lineStart + at[2 * k];
            int e = lineStart + at[2 * k + 1];
            return Arrays.equals(buf, s, e, key, 0, key.length);
        }

        /** The key of the line scan() just read from bytes[from, ...): its graph, else its subject, as written. */
        private byte[] key(byte[] bytes, int from) {
            int k = at[6] >= 0 ? 3 : 0;
            int s = at[2 * k];
            int e = at[2 * k + 1];
            if (decoded == null) {
                return Arrays.copyOfRange(bytes, from + s, from + e);
            }
            return decoded.substring(s, e).getBytes(StandardCharsets.UTF_8);
        }

        /** The key of the line that ends where the line at offset first begins (read back from the file). */
        private byte[] keyBefore(long first) throws IOException {
            long saved = file.getFilePointer();
            try {
                int window = 4096;
                while (true) {
                    long from = Math.max(0, first - window);
                    byte[] b = new byte[(int) (first - from)];
                    file.seek(from);
                    file.readFully(b);
                    int e = b.length;  // without the line's terminator: "\n", "\r\n" or "\r"
                    if (e > 0 && b[e - 1] == '\n') {
                        e--;
                        if (e > 0 && b[e - 1] == '\r') {
                            e--;
                        }
                    } else if (e > 0 && b[e - 1] == '\r') {
                        e--;
                    }
                    int s = e;
                    while (s > 0 && b[s - 1] != '\n' && b[s - 1] != '\r') {
                        s--;
                    }
                    if (s == 0 && from > 0) {
                        window *= 2;  // the line begins before the bytes read
                        continue;
                    }
                    if (from == 0 && s == 0 && e >= 3 && b[0] == (byte) 0xEF && b[1] == (byte) 0xBB
                            && b[2] == (byte) 0xBF) {
                        s = 3;  // the file's byte order mark
                    }
                    return scan(b, s, e) == NQuadsLine.READ ? key(b, s) : null;
                }
            } finally {
                file.seek(saved);
            }
        }

        /** The code of a canonical integer timestamp (twice its value, plus one for xsd:long), else NOT_PLAIN. */
        static long plainCode(UTF8String o) {
            byte[] b = o.getBytes();
            int n = b.length;
            if (n < 2 || b[0] != '"') {
                return NOT_PLAIN;
            }
            int i = 1;
            boolean negative = b[i] == '-';
            if (negative) {
                i++;
            }
            int d = i;
            long v = 0;
            while (i < n && b[i] >= '0' && b[i] <= '9') {
                v = v * 10 + (b[i] - '0');
                i++;
                if (i - d > 17) {
                    return NOT_PLAIN;
                }
            }
            if (i == d || (i - d > 1 && b[d] == '0')) {
                return NOT_PLAIN;
            }
            int bit;
            if (endsWith(b, i, INTEGER)) {
                bit = 0;
            } else if (endsWith(b, i, LONG)) {
                bit = 1;
            } else {
                return NOT_PLAIN;
            }
            return (negative ? -v : v) * 2 + bit;
        }

        private static boolean endsWith(byte[] b, int i, byte[] tail) {
            return b.length - i == tail.length && Arrays.equals(b, i, b.length, tail, 0, tail.length);
        }
    }
}
