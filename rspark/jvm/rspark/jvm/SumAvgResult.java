package rspark.jvm;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;

import org.apache.spark.sql.api.java.UDF8;

/**
 * The final value of SPARQL's SUM and AVG (without DISTINCT) from the partial sums rspark keeps per group: a Spark UDF
 * (avg, n, t, hi, lo, ds, dn, fs) -> the encoded literal, or null for an error.
 *
 * <ul>
 *   <li>n: the group's row count; t: the largest numeric type code of its values (0 integer, 1 decimal written
 *   without a point, 2 decimal, 3 float, 4 double; 99 or null: a value that is not a number, an error);</li>
 *   <li>hi, lo: the sums of the high and low 32 bits of the integers of at most 18 characters (null: none);</li>
 *   <li>ds: the decimal(38,18) sum of the other integers and the decimals, dn how many there were (ds null while
 *   dn &gt; 0: the sum overflowed); fs: the double sum of the floats and doubles (null: none).</li>
 * </ul>
 *
 * It computes exactly what the SQL of rspark.spark.expr_aggregate._sum_avg_split computes with Spark's decimal
 * arithmetic (the fallback without the JVM helpers; tests/test_sum_avg_result.py compares the two): the decimal sum
 * exact within decimal(38,18) (beyond 10^20: an error), AVG's decimal quotient divided at scale 39 and rounded half
 * up to 20 digits as Spark's decimal division does, then truncated to 18; the float / double average from the double
 * sum; lexical forms in XML Schema's canonical form ("2.5", "2.0", "2.5E0", "INF"). One call per group replaces an
 * expression Spark analysed, optimised, generated code for and shipped with every query that averages. A group of
 * integers alone whose sum is a long (AVG: within (-10^18, 10^18)) is computed with longs, the same literal about
 * eight times faster than with BigDecimal (a windowed average over 1e7 triples has 833,042 groups).
 */
public final class SumAvgResult implements UDF8<Boolean, Long, Integer, Long, Long, BigDecimal, Long, Double, String> {
    private static final long serialVersionUID = 1L;
    private static final String XSD = "http://www.w3.org/2001/XMLSchema#";
    private static final String ZERO = "\"0\"^^<" + XSD + "integer>";
    private static final String[] TYPE_IRI = {
        XSD + "integer", XSD + "decimal", XSD + "decimal", XSD + "float", XSD + "double"};
    private static final BigDecimal LIMIT20 = BigDecimal.TEN.pow(20);  // decimal(38,18): |x| < 10^20
    private static final BigDecimal LIMIT19 = BigDecimal.TEN.pow(19);  // decimal(37,18)
    private static final BigDecimal LIMIT18 = BigDecimal.TEN.pow(18);  // decimal(37,19)
    private static final long LONG18 = 1_000_000_000_000_000_000L;

    @Override
    public String call(Boolean avg, Long n, Integer t, Long hi, Long lo, BigDecimal ds, Long dn, Double fs) {
        if (n == null || n == 0) {
            return ZERO;
        }
        if (t == null || t < 0 || t > 4) {
            return null;
        }
        if (t == 0 && (dn == null || dn == 0) && fs == null && hi != null && lo != null) {
            String fast = avg ? integerAverage(hi, lo, n) : integerSum(hi, lo);
            if (fast != null) {
                return fast;
            }
        }
        BigDecimal sum = decimalSum(hi, lo, ds, dn);
        if (sum == null) {
            return null;
        }
        int type = avg ? Math.max(t, 2) : t;
        String lexical;
        if (type >= 3) {
            double f = ((fs == null ? 0.0 : fs) + sum.doubleValue());
            if (avg) {
                f = f / (double) n;
            }
            if (type == 3) {
                f = (double) (float) f;
            }
            lexical = canonicalDouble(f, type == 3);
        } else {
            BigDecimal d = avg ? divideByCount(sum, n) : sum;
            if (d == null) {
                return null;
            }
            if (type == 0) {
                lexical = d.setScale(0, RoundingMode.HALF_UP).toPlainString();
            } else {
                String s = d.signum() == 0 ? "0" : d.stripTrailingZeros().toPlainString();
                lexical = (type == 2 && s.indexOf('.') < 0) ? s + ".0" : s;
            }
        }
        return "\"" + lexical + "\"^^<" + TYPE_IRI[type] + ">";
    }

    /** hi * 2^32 + lo, or null when it leaves a long. */
    private static Long exactSum(long hi, long lo) {
        try {
            return Math.addExact(Math.multiplyExact(hi, 1L << 32), lo);
        } catch (ArithmeticException e) {
            return null;
        }
    }

    /**
     * SUM of integers alone (of at most 18 characters each) when their sum is a long: the same literal as the
     * decimal path (an xsd:integer), without BigDecimal; null otherwise.
     */
    static String integerSum(long hi, long lo) {
        Long v = exactSum(hi, lo);
        return v == null ? null : "\"" + v + "\"^^<" + TYPE_IRI[0] + ">";
    }

    /**
     * AVG of integers alone when their sum lies within (-10^18, 10^18) and the count below 2^31: the decimal path's
     * quotient (divideByCount: rounded half up at 20 digits, then truncated to 18) by long division, and its
     * canonical xsd:decimal form; null otherwise. (The decimal path rounds at 39 digits before it rounds at 20; for
     * a count below 10^19 the first rounding never moves the second, so one rounding at 20 digits is the same.)
     */
    static String integerAverage(long hi, long lo, long n) {
        Long sum = exactSum(hi, lo);
        if (sum == null || sum <= -LONG18 || sum >= LONG18 || n <= 0 || n > Integer.MAX_VALUE) {
            return null;
        }
        long a = Math.abs(sum);
        long whole = a / n;
        long r = a % n;
        long frac = 0;  // the first 18 fraction digits
        for (int i = 0; i < 18; i++) {
            r *= 10;
            frac = frac * 10 + r / n;
            r %= n;
        }
        long last2 = 0;  // digits 19 and 20
        for (int i = 0; i < 2; i++) {
            r *= 10;
            last2 = last2 * 10 + r / n;
            r %= n;
        }
        if (last2 == 99 && 2 * r >= n) {  // rounding half up at digit 20 carries into the first 18
            frac += 1;
            if (frac == LONG18) {
                frac = 0;
                whole += 1;
            }
        }
        String lexical;
        if (whole == 0 && frac == 0) {
            lexical = "0.0";
        } else {
            String digits = frac == 0 ? "0" : stripZeros(eighteenDigits(frac));
            lexical = (sum < 0 ? "-" : "") + whole + "." + digits;
        }
        return "\"" + lexical + "\"^^<" + TYPE_IRI[2] + ">";
    }

    private static String eighteenDigits(long frac) {
        String s = Long.toString(frac);
        return "000000000000000000".substring(s.length()) + s;
    }

    private static String stripZeros(String digits) {
        int end = digits.length();
        while (end > 1 && digits.charAt(end - 1) == '0') {
            end--;
        }
        return digits.substring(0, end);
    }

    /** The integers' and decimals' sum at scale 18; null when it leaves decimal(38,18). */
    static BigDecimal decimalSum(Long hi, Long lo, BigDecimal ds, Long dn) {
        BigDecimal ints = BigDecimal.ZERO.setScale(18);
        if (hi != null && lo != null) {
            BigInteger v = BigInteger.valueOf(hi).shiftLeft(32).add(BigInteger.valueOf(lo));
            ints = new BigDecimal(v).setScale(18);
            if (ints.abs().compareTo(LIMIT20) >= 0) {
                return null;
            }
        }
        BigDecimal decs = BigDecimal.ZERO.setScale(18);
        if (dn != null && dn > 0) {
            if (ds == null) {
                return null;  // the decimal sum overflowed
            }
            decs = ds.setScale(18, RoundingMode.HALF_UP);
        }
        if (ints.abs().compareTo(LIMIT19) < 0 && decs.abs().compareTo(LIMIT19) < 0) {
            return ints.add(decs);  // both fit decimal(37,18): the exact sum fits decimal(38,18)
        }
        // Spark's decimal(38,18) + decimal(38,18) is a decimal(38,17), rounded half up
        BigDecimal wide = ints.add(decs).setScale(17, RoundingMode.HALF_UP);
        return wide.abs().compareTo(LIMIT20) >= 0 ? null : wide.setScale(18);
    }

    /** sum / n as rspark's SQL divides a decimal by a count (expr_numeric.dec_div_by_count). */
    static BigDecimal divideByCount(BigDecimal sum, long n) {
        BigDecimal count = BigDecimal.valueOf(n);
        if (sum.abs().compareTo(LIMIT18) < 0) {
            // decimal(37,19) / decimal(20,0): a decimal(38,20), truncated to 18 digits
            BigDecimal q = sum.setScale(19).divide(count, 39, RoundingMode.HALF_UP).setScale(20, RoundingMode.HALF_UP);
            return q.setScale(18, RoundingMode.DOWN);
        }
        // decimal(38,18) / decimal(38,18): a decimal(38,6)
        return sum.divide(count, 39, RoundingMode.HALF_UP).setScale(6, RoundingMode.HALF_UP).setScale(18);
    }

    /** XML Schema's canonical xs:double / xs:float form, from Java's shortest round-trip digits. */
    static String canonicalDouble(double f, boolean isFloat) {
        String s = isFloat ? Float.toString((float) f) : Double.toString(f);
        if (s.equals("NaN")) {
            return "NaN";
        }
        if (s.equals("Infinity")) {
            return "INF";
        }
        if (s.equals("-Infinity")) {
            return "-INF";
        }
        String sign = s.startsWith("-") ? "-" : "";
        double v = Math.abs(f);
        if (v == 0) {
            return sign + "0.0E0";
        }
        String a = isFloat ? Float.toString((float) v) : Double.toString(v);
        if (a.indexOf('E') >= 0) {
            return sign + a;
        }
        int point = a.indexOf('.');
        String whole = a.substring(0, point);
        String frac = a.substring(point + 1);
        String sig = strip(whole + frac);
        int exp;
        if (!whole.equals("0")) {
            exp = whole.length() - 1;
        } else {
            int zeros = 0;
            while (zeros < frac.length() && frac.charAt(zeros) == '0') {
                zeros++;
            }
            exp = -(zeros + 1);
        }
        return sign + sig.charAt(0) + "." + (sig.length() == 1 ? "0" : sig.substring(1)) + "E" + exp;
    }

    private static String strip(String digits) {
        int start = 0;
        int end = digits.length();
        while (start < end && digits.charAt(start) == '0') {
            start++;
        }
        while (end > start && digits.charAt(end - 1) == '0') {
            end--;
        }
        return digits.substring(start, end);
    }
}
