package rspark.jvm;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;

/**
 * The subject, predicate and object of an encoded quoted triple (rspark.model.codec): a Spark UDF
 * {@code "<< s p o >>"} -> struct(s, p, o), each component encoded as in the column, or null when the value is not a
 * quoted triple (null, an IRI, a blank node, a literal, a malformed string).
 *
 * <p>RDF-star patterns decompose a quoted triple in place with it (rspark.spark.sparql.quoted), instead of joining
 * the solutions with a table of every quoted triple in the data. The encoding is exact to split: an IRI is
 * {@code <...>} with no {@code >} inside, a blank node {@code _:label} with no space, a literal {@code "..."} whose
 * lexical form escapes {@code \} and {@code "} (so the first unescaped {@code "} closes it) followed by a suffix
 * ({@code @lang} or {@code ^^<dt>}) with no space, a quoted triple {@code << s p o >>} with its components one space
 * apart (nested ones too).
 */
public final class QuotedParts implements UDF1<String, Row> {
    private static final long serialVersionUID = 1L;

    @Override
    public Row call(String t) {
        if (t == null || !t.startsWith("<< ") || !t.endsWith(" >>")) {
            return null;
        }
        int s = 3;
        int se = term(t, s);
        if (se < 0 || se >= t.length() || t.charAt(se) != ' ') {
            return null;
        }
        int p = se + 1;
        int pe = term(t, p);
        if (pe < 0 || pe >= t.length() || t.charAt(pe) != ' ') {
            return null;
        }
        int o = pe + 1;
        int oe = term(t, o);
        if (oe != t.length() - 3) {
            return null;
        }
        return RowFactory.create(t.substring(s, se), t.substring(p, pe), t.substring(o, oe));
    }

    /** The index just after the encoded term starting at i, or -1 when none starts there. */
    static int term(String t, int i) {
        int n = t.length();
        if (i >= n) {
            return -1;
        }
        char c = t.charAt(i);
        if (c == '<') {
            if (t.startsWith("<< ", i)) {
                int j = term(t, i + 3);
                if (j < 0 || j >= n || t.charAt(j) != ' ') {
                    return -1;
                }
                j = term(t, j + 1);
                if (j < 0 || j >= n || t.charAt(j) != ' ') {
                    return -1;
                }
                j = term(t, j + 1);
                return j >= 0 && t.startsWith(" >>", j) ? j + 3 : -1;
            }
            int close = t.indexOf('>', i + 1);
            return close < 0 ? -1 : close + 1;
        }
        if (c == '"') {
            int j = i + 1;
            while (j < n) {
                char d = t.charAt(j);
                if (d == '\\') {
                    j += 2;
                } else if (d == '"') {
                    break;
                } else {
                    j++;
                }
            }
            if (j >= n) {
                return -1;
            }
            return suffixEnd(t, j + 1);
        }
        if (c == '_' && t.startsWith("_:", i)) {
            return suffixEnd(t, i + 2);
        }
        return -1;
    }

    /** The index of the first space at or after i, or the string's end. */
    private static int suffixEnd(String t, int i) {
        int space = t.indexOf(' ', i);
        return space < 0 ? t.length() : space;
    }
}
