package rspark.jvm;

import java.math.BigDecimal;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Pattern;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.EvalMode;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.types.UTF8String;

import scala.Option;

/**
 * The facets of an encoded term (rspark.model.codec) that SPARQL's operators look into: a Spark UDF
 * {@code enc -> struct(enc, sfx, lexr, t, d, f, k)}, the struct rspark.spark.expr.values.facet_pack builds in SQL
 * (level "leaf"): the literal's suffix ({@code ^^<dt>}, {@code @lang}, or ''; the whole string of a term without a
 * quote), its still-escaped lexical form, its numeric type code (0 integer, 1 decimal written without a point,
 * 2 decimal, 3 float, 4 double; null: not a valid number), its value as decimal(38,18) (integers and decimals) or
 * double (floats rounded to float precision, doubles), and its comparison category k (0 number, 1 simple literal,
 * 2 language-tagged, 3 boolean, 4 dateTime, 5 date, 6 other literal, 7 IRI, 8 blank node, 9 quoted triple).
 *
 * <p>It computes what that SQL computes, with Spark's own pieces: the string functions of UTF8String that
 * substring_index, substring, length and instr run, the regular expressions RLIKE runs (find, as RLIKE does), and
 * Spark's Cast evaluated as the session's non-ANSI casts are (tests/test_term_facets.py compares the two on
 * generated terms). One call stands in for an expression of six lambda-bound fields that Spark analysed at every
 * plan built (the FILTERs of a live query, at every evaluation) and evaluated interpreted, row by row.
 */
public final class TermFacets implements UDF1<String, Row> {
    private static final long serialVersionUID = 1L;
    private static final UTF8String QUOTE = UTF8String.fromString("\"");
    private static final UTF8String DOT = UTF8String.fromString(".");
    private static final UTF8String XSD_SFX = UTF8String.fromString("^^<http://www.w3.org/2001/XMLSchema#");
    private static final int INT = 0;
    private static final int DEC0 = 1;
    private static final int DEC = 2;
    private static final int FLT = 3;
    private static final int DBL = 4;
    private static final int K_NUM = 0;
    private static final int K_STR = 1;
    private static final int K_LANG = 2;
    private static final int K_OTHER = 6;
    private static final int K_IRI = 7;
    private static final int K_BNODE = 8;
    private static final int K_TRIPLE = 9;
    private static final Map<String, Integer> NUM_TYPE = new HashMap<>();
    private static final Map<String, Integer> KIND = new HashMap<>();
    private static final Map<Integer, Pattern> NUM_RE = new HashMap<>();
    private static final Map<Integer, Pattern> KIND_RE = new HashMap<>();

    static {
        String[] integers = {"integer", "nonPositiveInteger", "negativeInteger", "long", "int", "short", "byte",
            "nonNegativeInteger", "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte", "positiveInteger"};
        for (String name : integers) {
            NUM_TYPE.put(name, INT);
        }
        NUM_TYPE.put("decimal", DEC);
        NUM_TYPE.put("float", FLT);
        NUM_TYPE.put("double", DBL);
        Pattern dbl = Pattern.compile("^([+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?INF|NaN)$");
        NUM_RE.put(INT, Pattern.compile("^[+-]?[0-9]+$"));
        NUM_RE.put(DEC, Pattern.compile("^[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)$"));
        NUM_RE.put(FLT, dbl);
        NUM_RE.put(DBL, dbl);
        KIND.put("boolean", 3);
        KIND.put("dateTime", 4);
        KIND.put("date", 5);
        KIND_RE.put(3, Pattern.compile("^(true|false|1|0)$"));
        KIND_RE.put(4, Pattern.compile(
            "^-?[0-9]{4,}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})?$"));
        KIND_RE.put(5, Pattern.compile("^-?[0-9]{4,}-[0-9]{2}-[0-9]{2}(Z|[+-][0-9]{2}:[0-9]{2})?$"));
    }

    // Spark's casts of a string, as a session with spark.sql.ansi.enabled=false runs them (rspark's setting)
    private transient Cast toDecimal;
    private transient Cast toDouble;

    @Override
    public Row call(String enc) {
        if (enc == null) {
            return RowFactory.create(null, null, null, null, null, null, null);
        }
        UTF8String c = UTF8String.fromString(enc);
        UTF8String sfx = c.subStringIndex(QUOTE, -1);
        UTF8String lexr = c.substringSQL(2, c.numChars() - sfx.numChars() - 2);
        String lex = lexr.toString();
        Integer t0 = NUM_TYPE.get(xsdLocal(sfx));
        Integer t = null;
        if (t0 != null && NUM_RE.get(t0).matcher(lex).find()) {
            t = (t0 == DEC && lexr.indexOf(DOT, 0) < 0) ? DEC0 : t0;
        }
        BigDecimal d = null;
        Double f = null;
        if (t0 != null && t0 <= DEC) {
            Decimal v = (Decimal) cast(true).eval(new GenericInternalRow(new Object[] {lexr}));
            d = v == null ? null : v.toJavaBigDecimal();
        } else if (t0 != null) {
            Double v = (Double) cast(false).eval(new GenericInternalRow(new Object[] {lexr}));
            f = (v == null || t0 == DBL) ? v : Double.valueOf((double) (float) v.doubleValue());
        }
        return RowFactory.create(enc, sfx.toString(), lex, t, d, f, kind(enc, sfx, lex, t));
    }

    private Cast cast(boolean decimal) {
        if (toDecimal == null) {
            BoundReference string = new BoundReference(0, DataTypes.StringType, true);
            toDecimal = new Cast(string, DataTypes.createDecimalType(38, 18), Option.empty(), EvalMode.LEGACY());
            toDouble = new Cast(string, DataTypes.DoubleType, Option.empty(), EvalMode.LEGACY());
        }
        return decimal ? toDecimal : toDouble;
    }

    /** The local name of an XSD datatype suffix (its last character, the closing bracket, cut), else null. */
    private static String xsdLocal(UTF8String sfx) {
        if (!sfx.startsWith(XSD_SFX)) {
            return null;
        }
        int n = XSD_SFX.numChars();
        return sfx.substringSQL(n + 1, sfx.numChars() - (n + 1)).toString();
    }

    private static Integer kind(String enc, UTF8String sfx, String lex, Integer t) {
        if (!enc.startsWith("\"")) {
            return enc.startsWith("_:") ? K_BNODE : enc.startsWith("<< ") ? K_TRIPLE : K_IRI;
        }
        if (t != null) {
            return K_NUM;
        }
        if (sfx.numBytes() == 0) {
            return K_STR;
        }
        if (sfx.toString().startsWith("@")) {
            return K_LANG;
        }
        Integer k0 = KIND.get(xsdLocal(sfx));
        return (k0 != null && KIND_RE.get(k0).matcher(lex).find()) ? k0 : K_OTHER;
    }
}
