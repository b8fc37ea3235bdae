package rspark.jvm;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
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

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return "count".equals(options.get("mode")) ? COUNT : ROWS;
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

        Options(CaseInsensitiveStringMap options) {
            path = options.get("path");
            if (path == null) {
                throw new IllegalArgumentException("rspark's N-Quads source needs a path");
            }
            splitBytes = Math.max(1L, options.getLong("splitBytes", 128L << 20));
            quads = options.getBoolean("quads", true);
            prefix = options.getOrDefault("prefix", "_:b_");
            count = "count".equals(options.get("mode"));
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
                return new LineReader(options, split.start, split.end);
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
    static final class LineReader implements PartitionReader<InternalRow> {
        private static final int CHUNK = 1 << 20;
        private final RandomAccessFile file;
        private final Options options;
        private final long start;
        private final long end;
        private final UTF8String prefix;
        private final String prefixText;
        private final AsciiLine ascii = new AsciiLine();
        private final int[] at = new int[8];
        private byte[] buf = new byte[0];
        private int pos;          // next unread byte of buf
        private int limit;        // bytes of buf filled
        private long bufStart;    // the file offset of buf[0]
        private boolean eof;
        private long idx = -1;    // the index of the current line in the split
        private boolean done;
        private InternalRow row;
        private UTF8String lastGraph;  // the graph of the last line read in this split (null: none)

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

        @Override
        public boolean next() throws IOException {
            while (!done) {
                if (pos >= limit && !fill()) {
                    done = true;
                    break;
                }
                if (bufStart + pos >= end) {
                    done = true;  // the next line begins in the next split
                    break;
                }
                // one line: [pos, t) with its terminator after it
                int t = pos;
                while (true) {
                    while (t < limit && buf[t] != '\n' && buf[t] != '\r') {
                        t++;
                    }
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
                int lineStart = pos;
                int lineEnd = t;
                if (t < limit) {
                    pos = (buf[t] == '\r' && t + 1 < limit && buf[t + 1] == '\n') ? t + 2 : t + 1;
                } else {
                    pos = limit;
                }
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

        /** The row of the line buf[from, to), or null when it has nothing to read. */
        private InternalRow read(int from, int to) {
            boolean isAscii = true;
            ascii.quotes = 0;
            for (int i = from; i < to; i++) {
                byte b = buf[i];
                if (b < 0) {
                    isAscii = false;
                    break;
                }
                if (b == '"') {
                    ascii.quote(i - from);
                }
            }
            Object[] values = new Object[7];
            values[5] = start;
            values[6] = idx;
            CharSequence text = ascii;
            String decoded = null;  // the line as a String when it is not ASCII
            if (isAscii) {
                ascii.bytes = buf;
                ascii.offset = from;
                ascii.length = to - from;
            } else {
                decoded = new String(buf, from, to - from, StandardCharsets.UTF_8);
                text = decoded;
            }
            int found = NQuadsLine.scan(text, options.quads, at);
            if (found == NQuadsLine.NOTHING_READ) {
                return null;
            }
            if (found == NQuadsLine.UNREAD) {
                values[4] = UTF8String.fromBytes(buf, from, to - from);
            } else {
                for (int k = 0; k < 4; k++) {  // s, p, o, g
                    int s = at[2 * k];
                    int e = at[2 * k + 1];
                    values[k] = s < 0 ? UTF8String.EMPTY_UTF8 : decoded == null ? term(from, s, e)
                            : UTF8String.fromString(NQuadsLine.term(decoded, s, e, prefixText));
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
}
