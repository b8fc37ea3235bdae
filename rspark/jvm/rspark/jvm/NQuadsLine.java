package rspark.jvm;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF3;

/**
 * The JVM fast path for N-Triples / N-Quads lines: a Spark UDF (line, quads, blank-node prefix) -> struct(s, p, o, g).
 *
 * It reads a subset of the lines that rspark.io.rdf.FAST_LINE accepts (terms already in rspark's canonical
 * encoding: absolute IRIs of a plain shape, ASCII blank-node labels, literals with only the escapes \" \\ \n \r,
 * lower-case simple language tags, no rdf: datatype and no xsd:string) and cuts them exactly as
 * rspark.io.rdf.fast_lines does: the terms as written, blank-node labels "_:x" written prefix + "x", g "" when the
 * line has no graph. It returns
 *   - a row with four null fields for a line with nothing to read (blank, or a comment alone);
 *   - null for every other line it does not read, which the Python path then parses (pyoxigraph), reporting
 *     errors. Being a subset is what makes this safe: it never reads a line differently from the Python path
 *     (tests/test_jvm_parser.py compares them).
 */
public final class NQuadsLine implements UDF3<String, Boolean, String, Row> {
    private static final long serialVersionUID = 1L;
    private static final Row NOTHING = RowFactory.create(null, null, null, null);
    private static final String RDF_DATATYPE = "\"^^<http://www.w3.org/1999/02/22-rdf-syntax-ns#";
    private static final String XSD_STRING = "\"^^<http://www.w3.org/2001/XMLSchema#string>";

    /** What {@link #scan} found: a line with nothing to read (blank, or a comment alone). */
    static final int NOTHING_READ = 0;
    /** What {@link #scan} found: a line this scanner does not read (left to the Python path). */
    static final int UNREAD = 1;
    /** What {@link #scan} found: a line read into terms, whose bounds it wrote into its array. */
    static final int READ = 2;

    @Override
    public Row call(String line, Boolean quads, String prefix) {
        if (line == null) {
            return null;
        }
        int[] at = new int[8];
        switch (scan(line, quads, at)) {
            case NOTHING_READ:
                return NOTHING;
            case UNREAD:
                return null;
            default:
                String g = at[6] < 0 ? "" : term(line, at[6], at[7], prefix);
                return RowFactory.create(term(line, at[0], at[1], prefix), line.substring(at[2], at[3]),
                        term(line, at[4], at[5], prefix), g);
        }
    }

    /**
     * Scans one line (without its line terminator): NOTHING_READ, UNREAD, or READ with the bounds of the terms
     * written into at: subject at[0]..at[1], predicate at[2]..at[3], object at[4]..at[5], graph at[6]..at[7]
     * (at[6] = -1 when the line has no graph). A blank-node term's bounds include its "_:". The line is a String
     * (the UDF) or the ASCII bytes of a file ({@link NQuadsSource}): the same scanner reads both.
     */
    static int scan(CharSequence line, boolean quads, int[] at) {
        return scan(line, quads, at, null);
    }

    /** {@link #scan(CharSequence, boolean, int[])}, with the IRIs a reader of ASCII lines has already found
     *  well-formed ({@code memo}, null: none; only for an {@link NQuadsSource.AsciiLine}). */
    static int scan(CharSequence line, boolean quads, int[] at, IriMemo memo) {
        if (memo != null) {
            memo.newLine();
        }
        int n = line.length();
        int i = spaces(line, 0);
        if (i == n || line.charAt(i) == '#') {
            return NOTHING_READ;
        }
        if (indexOf(line, '\uFFFD') >= 0 || contains(line, RDF_DATATYPE) || contains(line, XSD_STRING)) {
            return UNREAD;  // a replaced invalid byte, or a datatype the encoding rewrites
        }
        int se = node(line, i, memo, IriMemo.SUBJECT);
        if (se < 0) {
            return UNREAD;
        }
        int ps = spaces(line, se);
        if (ps == se) {
            return UNREAD;
        }
        int pe = iri(line, ps, memo, IriMemo.PREDICATE);
        if (pe < 0) {
            return UNREAD;
        }
        int os = spaces(line, pe);
        if (os == pe || os == n) {
            return UNREAD;
        }
        int oe = line.charAt(os) == '"' ? literal(line, os, memo) : node(line, os, memo, IriMemo.OBJECT);
        if (oe < 0) {
            return UNREAD;
        }
        int m = spaces(line, oe);
        at[6] = -1;
        at[7] = -1;
        if (m > oe && m < n && line.charAt(m) != '.') {
            if (!quads) {
                return UNREAD;
            }
            int ge = node(line, m, memo, IriMemo.GRAPH);
            if (ge < 0) {
                return UNREAD;
            }
            at[6] = m;
            at[7] = ge;
            m = spaces(line, ge);
        }
        if (m == n || line.charAt(m) != '.') {
            return UNREAD;
        }
        m = spaces(line, m + 1);
        if (m < n && line.charAt(m) != '#') {
            return UNREAD;
        }
        at[0] = i;
        at[1] = se;
        at[2] = ps;
        at[3] = pe;
        at[4] = os;
        at[5] = oe;
        return READ;
    }

    private static int indexOf(CharSequence line, char c) {
        if (!(line instanceof String)) {
            return -1;  // ASCII bytes: no replacement character
        }
        return ((String) line).indexOf(c);
    }

    /** Whether t occurs in line; ASCII bytes answer for themselves ({@link NQuadsSource.AsciiLine#contains}). */
    private static boolean contains(CharSequence line, String t) {
        if (line instanceof String) {
            return ((String) line).contains(t);
        }
        return ((NQuadsSource.AsciiLine) line).contains(t);
    }

    /** The term at line[start, end): a blank node's label gets the load's prefix in place of "_:". */
    static String term(String line, int start, int end, String prefix) {
        if (line.charAt(start) == '_') {
            return prefix + line.substring(start + 2, end);
        }
        return line.substring(start, end);
    }

    private static int spaces(CharSequence line, int i) {
        int n = line.length();
        while (i < n && (line.charAt(i) == ' ' || line.charAt(i) == '\t')) {
            i++;
        }
        return i;
    }

    /** An IRI or a blank node from i: the index after it, or -1. */
    private static int node(CharSequence line, int i, IriMemo memo, int slot) {
        if (i >= line.length()) {
            return -1;
        }
        char c = line.charAt(i);
        if (c == '<') {
            return iri(line, i, memo, slot);
        }
        if (c == '_') {
            return bnode(line, i);
        }
        return -1;
    }

    /** _:[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_-])? : the longest such label (a final '.' ends the statement). */
    private static int bnode(CharSequence line, int i) {
        int n = line.length();
        if (i + 2 >= n || line.charAt(i + 1) != ':' || !labelChar(line.charAt(i + 2))) {
            return -1;
        }
        int j = i + 3;
        while (j < n && (labelChar(line.charAt(j)) || line.charAt(j) == '.' || line.charAt(j) == '-')) {
            j++;
        }
        while (line.charAt(j - 1) == '.') {
            j--;
        }
        return j;
    }

    private static boolean labelChar(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    }

    /** "..." with only the escapes \" \\ \n \r, then @lang ([a-z]{2,3}(-[a-z]{2}|-[0-9]{3})?) or ^^IRI. */
    private static int literal(CharSequence line, int i, IriMemo memo) {
        int n = line.length();
        int j = i + 1;
        while (true) {
            if (j >= n) {
                return -1;
            }
            char c = line.charAt(j);
            if (c == '"') {
                break;
            }
            if (c == '\\') {
                if (j + 1 >= n) {
                    return -1;
                }
                char e = line.charAt(j + 1);
                if (e != '"' && e != '\\' && e != 'n' && e != 'r') {
                    return -1;
                }
                j += 2;
            } else if (c == '\n' || c == '\r') {
                return -1;
            } else {
                j++;
            }
        }
        j++;  // after the closing quote
        if (j < n && line.charAt(j) == '@') {
            int k = j + 1;
            while (k < n && line.charAt(k) >= 'a' && line.charAt(k) <= 'z') {
                k++;
            }
            if (k - j - 1 < 2 || k - j - 1 > 3) {
                return -1;
            }
            if (k < n && line.charAt(k) == '-') {
                if (k + 2 < n && lower(line.charAt(k + 1)) && lower(line.charAt(k + 2))) {
                    k += 3;
                } else if (k + 3 < n && digit(line.charAt(k + 1)) && digit(line.charAt(k + 2))
                        && digit(line.charAt(k + 3))) {
                    k += 4;
                } else {
                    return -1;
                }
            }
            return k;
        }
        if (j + 1 < n && line.charAt(j) == '^' && line.charAt(j + 1) == '^') {
            return iri(line, j + 2, memo, IriMemo.DATATYPE);
        }
        return j;
    }

    private static boolean lower(char c) {
        return c >= 'a' && c <= 'z';
    }

    private static boolean digit(char c) {
        return c >= '0' && c <= '9';
    }

    private static boolean hex(char c) {
        return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    }

    // Character classes of the ASCII characters, one bit each (unit() tests a class in one table lookup):
    private static final byte UNRESERVED = 1;  // a-z A-Z 0-9 - . _ ~
    private static final byte SUB_DELIM = 2;   // ! $ & ' ( ) * + , ; =
    private static final byte COLON = 4;
    private static final byte AT = 8;
    private static final byte SLASH_QUESTION = 16;
    private static final byte[] ASCII = new byte[128];

    static {
        for (char c = 0; c < 128; c++) {
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || "-._~".indexOf(c) >= 0) {
                ASCII[c] |= UNRESERVED;
            }
            if ("!$&'()*+,;=".indexOf(c) >= 0) {
                ASCII[c] |= SUB_DELIM;
            }
        }
        ASCII[':'] |= COLON;
        ASCII['@'] |= AT;
        ASCII['/'] |= SLASH_QUESTION;
        ASCII['?'] |= SLASH_QUESTION;
    }

    /** The ASCII classes a character of class cls may have: 'u' userinfo (unreserved, sub-delims, ':'), 'h' host
     *  (unreserved, sub-delims), 'p' pchar (unreserved, sub-delims, ':', '@'), 'q' query and fragment characters
     *  (pchar, '/', '?'). */
    private static int mask(char cls) {
        switch (cls) {
            case 'u':
                return UNRESERVED | SUB_DELIM | COLON;
            case 'p':
                return UNRESERVED | SUB_DELIM | COLON | AT;
            case 'q':
                return UNRESERVED | SUB_DELIM | COLON | AT | SLASH_QUESTION;
            default:
                return UNRESERVED | SUB_DELIM;
        }
    }

    /** A non-ASCII unreserved character of an IRI (RFC 3987's ucschar within the Basic Multilingual Plane). */
    private static boolean unreservedWide(char c) {
        return (c >= 0xA0 && c <= 0xD7FF) || (c >= 0xF900 && c <= 0xFDCF) || (c >= 0xFDF0 && c <= 0xFFEF);
    }

    /** At i one character of the classes in mask (see mask()), or a %XX escape: its length (1 or 3), else 0. */
    private static int unit(CharSequence line, int i, int mask) {
        char c = line.charAt(i);
        if (c < 128) {
            if ((ASCII[c] & mask) != 0) {
                return 1;
            }
            return c == '%' && i + 2 < line.length() && hex(line.charAt(i + 1)) && hex(line.charAt(i + 2)) ? 3 : 0;
        }
        return unreservedWide(c) ? 1 : 0;
    }

    /** The index after a run of characters of class cls from i (stops at the first other character). */
    private static int run(CharSequence line, int i, char cls) {
        int n = line.length();
        int mask = mask(cls);
        while (i < n) {
            int len = unit(line, i, mask);
            if (len == 0) {
                return i;
            }
            i += len;
        }
        return i;
    }

    /** {@link #iri(CharSequence, int)}, answered from {@code memo} when the IRI at i is one it holds (the same
     *  bytes: the same answer), and remembered there when it is well-formed. */
    private static int iri(CharSequence line, int i, IriMemo memo, int slot) {
        if (memo == null) {
            return iri(line, i);
        }
        NQuadsSource.AsciiLine ascii = (NQuadsSource.AsciiLine) line;
        int known = memo.match(ascii.bytes, ascii.offset + i, ascii.offset + ascii.length, slot);
        if (known > 0) {
            return i + known;
        }
        int end = iri(line, i);
        if (end > 0) {
            memo.remember(ascii.bytes, ascii.offset + i, ascii.offset + end, slot);
        }
        return end;
    }

    /**
     * The IRIs a reader found well-formed, by the place they had in their line (subject, predicate, object,
     * datatype, graph), the last {@link #WAYS} of each: a stream repeats its predicates, datatypes, and an element's
     * subject and graph name line after line, and comparing an IRI's bytes with a remembered one costs less than
     * checking its grammar again. Whether an IRI is well-formed depends on its text alone, so the answer is the
     * one {@link #iri(CharSequence, int)} gives. The newest are compared first (an element's name repeats on its
     * lines), and the byte before the closing bracket before the others (IRIs of one place often differ only at
     * their end). {@link #hit} says which entry the last scanned line's IRI of each place is (-1: none), so that
     * its reader can keep one term value per entry ({@link #value}, {@link #keep}) rather than make one per line.
     */
    static final class IriMemo {
        static final int SUBJECT = 0;
        static final int PREDICATE = 1;
        static final int OBJECT = 2;
        static final int DATATYPE = 3;
        static final int GRAPH = 4;
        static final int WAYS = 8;
        private final byte[][][] known = new byte[5][WAYS][];
        private final Object[][] values = new Object[5][WAYS];
        private final int[] next = new int[5];
        /** The entry of each place's IRI in the line scanned last, -1 when it has none (or not an IRI there). */
        final int[] hit = new int[5];

        /** Forgets which entries the line scanned before had (a new line is scanned). */
        void newLine() {
            java.util.Arrays.fill(hit, -1);
        }

        /** The length of the remembered IRI of this slot that bytes[from, limit) starts with, else 0. */
        int match(byte[] bytes, int from, int limit, int slot) {
            byte[][] ways = known[slot];
            int w = next[slot];
            for (int k = 0; k < WAYS; k++) {
                w = w == 0 ? WAYS - 1 : w - 1;  // newest first
                byte[] iri = ways[w];
                if (iri == null) {
                    return 0;  // the older entries are empty too
                }
                int to = from + iri.length;
                if (to <= limit && bytes[to - 1] == '>' && bytes[to - 2] == iri[iri.length - 2]
                        && java.util.Arrays.equals(bytes, from, to, iri, 0, iri.length)) {
                    hit[slot] = w;
                    return iri.length;
                }
            }
            return 0;
        }

        /** Remembers the well-formed IRI bytes[from, to) (with its brackets) in this slot, in place of its oldest. */
        void remember(byte[] bytes, int from, int to, int slot) {
            int w = next[slot];
            known[slot][w] = java.util.Arrays.copyOfRange(bytes, from, to);
            values[slot][w] = null;
            hit[slot] = w;
            next[slot] = (w + 1) % WAYS;
        }

        /** The term value kept for entry w of this slot (null: none yet). */
        Object value(int slot, int w) {
            return values[slot][w];
        }

        /** Keeps v as the term value of entry w of this slot (until the entry is replaced). */
        void keep(int slot, int w, Object v) {
            values[slot][w] = v;
        }
    }

    /** An absolute IRI <scheme:...> from i, of FAST_LINE's shape: the index after '>', or -1. */
    private static int iri(CharSequence line, int i) {
        int n = line.length();
        if (i >= n || line.charAt(i) != '<') {
            return -1;
        }
        int j = i + 1;
        if (j >= n || !((line.charAt(j) >= 'a' && line.charAt(j) <= 'z') || (line.charAt(j) >= 'A' && line.charAt(j) <= 'Z'))) {
            return -1;
        }
        j++;
        while (j < n) {
            char c = line.charAt(j);
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || digit(c) || c == '+' || c == '.' || c == '-') {
                j++;
            } else {
                break;
            }
        }
        if (j >= n || line.charAt(j) != ':') {
            return -1;
        }
        j++;
        if (j + 1 < n && line.charAt(j) == '/' && line.charAt(j + 1) == '/') {
            j += 2;
            // authority: (userinfo@)? host (:port)?
            int u = run(line, j, 'u');
            if (u < n && line.charAt(u) == '@') {
                j = u + 1;
            }
            j = run(line, j, 'h');
            if (j < n && line.charAt(j) == ':') {
                j++;
                while (j < n && digit(line.charAt(j))) {
                    j++;
                }
            }
            // path-abempty: (/ pchar*)*
            while (j < n && line.charAt(j) == '/') {
                j = run(line, j + 1, 'p');
            }
        } else {
            // /? (pchar+ (/ pchar*)*)?
            if (j < n && line.charAt(j) == '/') {
                j++;
            }
            int k = run(line, j, 'p');
            if (k > j) {
                j = k;
                while (j < n && line.charAt(j) == '/') {
                    j = run(line, j + 1, 'p');
                }
            }
        }
        if (j < n && line.charAt(j) == '?') {
            j = run(line, j + 1, 'q');
        }
        if (j < n && line.charAt(j) == '#') {
            j = run(line, j + 1, 'q');
        }
        return j < n && line.charAt(j) == '>' ? j + 1 : -1;
    }
}
