package rspark.jvm;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute;
import org.apache.spark.sql.catalyst.analysis.UnresolvedFunction;
import org.apache.spark.sql.catalyst.expressions.Add;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.BitwiseAnd;
import org.apache.spark.sql.catalyst.expressions.BitwiseOr;
import org.apache.spark.sql.catalyst.expressions.BitwiseXor;
import org.apache.spark.sql.catalyst.expressions.CaseWhen;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Concat;
import org.apache.spark.sql.catalyst.expressions.Divide;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThan;
import org.apache.spark.sql.catalyst.expressions.GreaterThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.IntegralDivide;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.LambdaFunction;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.LessThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.catalyst.expressions.Multiply;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.Not;
import org.apache.spark.sql.catalyst.expressions.Or;
import org.apache.spark.sql.catalyst.expressions.RLike;
import org.apache.spark.sql.catalyst.expressions.Remainder;
import org.apache.spark.sql.catalyst.expressions.Subtract;
import org.apache.spark.sql.catalyst.expressions.UnresolvedNamedLambdaVariable;
import org.apache.spark.sql.classic.ExpressionUtils;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;

import scala.Option;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.BoxedUnit;

/**
 * Spark SQL expression text to a Column without Spark's SQL parser, for the forms rspark's expression compiler
 * writes: a Column whose expression equals (Catalyst's {@code equals}) the one Spark's parser builds from the same
 * text, or null for a text this class does not read (the caller then has Spark parse it).
 *
 * <p>Why: Spark's parser (ANTLR) is slow on the long nested expressions of SPARQL's type and error rules until its
 * prediction cache has warmed up: the first parse of such an expression in a JVM takes seconds, most of a short
 * run's planning. This reader is a recursive descent over the same grammar's subset, with Spark's precedence (unary,
 * multiplicative, additive and ||, &amp;, ^, |, comparison; then the predicates IN, RLIKE / REGEXP, IS [NOT] NULL;
 * NOT, AND, OR) and Spark's AST builder's choices: searched CASE, CAST to the simple types, function calls (with
 * DISTINCT), lambdas (attributes in a lambda's body become lambda variables), dotted names, and literals (strings
 * with the escapes Spark unescapes, integers as int / bigint / decimal by size, decimals, doubles, booleans, NULL).
 * Anything else (a simple CASE, LIKE, BETWEEN, subscripts, window and filter clauses, typed literals, other escapes,
 * keywords used as names) is not read. rspark's tests compare the two parsers' expressions for every text the
 * suite compiles (RSPARK_CHECK_SQL=1).
 */
public final class SqlColumns {
    private SqlColumns() {}

    /** Thrown for a text this class does not read. */
    private static final class Unsupported extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Unsupported(String what) {
            super(what, null, false, false);
        }
    }

    /** The Column of {@code sql}, or null when the text is not one of the forms read here. */
    public static Column column(String sql) {
        Expression e = expression(sql);
        return e == null ? null : ExpressionUtils.column(e);
    }

    /** The expression of {@code sql}, or null when the text is not one of the forms read here. */
    public static Expression expression(String sql) {
        try {
            SqlColumns.Reader reader = new SqlColumns.Reader(sql);
            Expression e = reader.expression();
            if (reader.pos != reader.tokens.size()) {
                return null;
            }
            return e;
        } catch (RuntimeException e) {  // Unsupported, or a value Spark's parser refuses (it then says why)
            return null;
        }
    }

    /** Why {@code sql} is not read here (null: it is), for rspark's tests and debugging. */
    public static String unread(String sql) {
        try {
            SqlColumns.Reader reader = new SqlColumns.Reader(sql);
            reader.expression();
            return reader.pos == reader.tokens.size() ? null : "text after the expression at token " + reader.pos;
        } catch (RuntimeException e) {
            return e.getMessage();
        }
    }

    private enum Kind { STRING, QUOTED, NUMBER, WORD, SYMBOL }

    private record Token(Kind kind, String text) {}

    // words that are not plain names in Spark's grammar where rspark's texts could use them as names or functions
    private static final Set<String> SPECIAL = Set.of(
        "case", "when", "then", "else", "end", "cast", "try_cast", "and", "or", "not", "in", "is", "null", "true",
        "false", "like", "ilike", "rlike", "regexp", "between", "distinct", "exists", "interval", "extract",
        "position", "trim", "overlay", "timestampadd", "timestampdiff", "dateadd",
        "date_add", "datediff", "date_diff", "first", "last", "any", "some", "every", "current_date",
        "current_timestamp", "current_time", "current_user", "user", "session_user", "current_catalog",
        "current_database", "current_schema", "localtimestamp", "filter", "over", "within", "ignore", "respect",
        "div", "escape", "struct", "array", "unknown", "from", "for", "as", "date", "timestamp",
        "timestamp_ltz", "timestamp_ntz", "binary", "collate", "percentile_cont", "percentile_disc", "mode",
        "listagg", "string_agg", "identifier", "any_value", "sort", "order", "by", "rows", "range", "partition");

    private static final class Reader {
        final List<Token> tokens = new ArrayList<>();
        int pos = 0;
        int lambdaDepth = 0;
        final boolean escapedStrings = SQLConf.get().escapedStringLiterals();

        Reader(String sql) {
            int i = 0;
            int n = sql.length();
            while (i < n) {
                char c = sql.charAt(i);
                if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
                    i++;
                } else if (c == '\'') {
                    int j = i + 1;
                    StringBuilder raw = new StringBuilder();
                    while (true) {
                        if (j >= n) {
                            throw new Unsupported("unterminated string");
                        }
                        char d = sql.charAt(j);
                        if (d == '\\') {
                            if (j + 1 >= n) {
                                throw new Unsupported("escape at end");
                            }
                            raw.append(d).append(sql.charAt(j + 1));
                            j += 2;
                        } else if (d == '\'') {
                            break;
                        } else {
                            raw.append(d);
                            j++;
                        }
                    }
                    tokens.add(new Token(Kind.STRING, raw.toString()));
                    i = j + 1;
                } else if (c == '`') {
                    int j = i + 1;
                    StringBuilder name = new StringBuilder();
                    while (true) {
                        if (j >= n) {
                            throw new Unsupported("unterminated name");
                        }
                        char d = sql.charAt(j);
                        if (d == '`') {
                            if (j + 1 < n && sql.charAt(j + 1) == '`') {
                                name.append('`');
                                j += 2;
                                continue;
                            }
                            break;
                        }
                        name.append(d);
                        j++;
                    }
                    tokens.add(new Token(Kind.QUOTED, name.toString()));
                    i = j + 1;
                } else if (digit(c) || (c == '.' && i + 1 < n && digit(sql.charAt(i + 1)))) {
                    int j = i;
                    while (j < n && (word(sql.charAt(j)) || sql.charAt(j) == '.'
                            || ((sql.charAt(j) == '+' || sql.charAt(j) == '-')
                                && (sql.charAt(j - 1) == 'e' || sql.charAt(j - 1) == 'E')))) {
                        j++;
                    }
                    tokens.add(new Token(Kind.NUMBER, sql.substring(i, j)));
                    i = j;
                } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
                    int j = i;
                    while (j < n && word(sql.charAt(j))) {
                        j++;
                    }
                    tokens.add(new Token(Kind.WORD, sql.substring(i, j)));
                    i = j;
                } else {
                    String two = i + 1 < n ? sql.substring(i, i + 2) : "";
                    String three = i + 2 < n ? sql.substring(i, i + 3) : "";
                    String sym;
                    if (three.equals("<=>")) {
                        sym = three;
                    } else if (two.equals("->") || two.equals("<=") || two.equals(">=") || two.equals("<>")
                            || two.equals("!=") || two.equals("==") || two.equals("||")) {
                        sym = two;
                    } else if (two.equals("<<") || two.equals(">>") || two.equals("--") || two.equals("/*")
                            || two.equals("::") || two.equals("|>")) {
                        throw new Unsupported("operator " + two);
                    } else if ("(),.=<>+-*/%&|^".indexOf(c) >= 0) {
                        sym = String.valueOf(c);
                    } else {
                        throw new Unsupported("character " + c);
                    }
                    tokens.add(new Token(Kind.SYMBOL, sym));
                    i += sym.length();
                }
            }
        }

        // Spark's unquoted names and numbers are ASCII: any other character is not read here
        static boolean digit(char c) {
            return c >= '0' && c <= '9';
        }

        static boolean word(char c) {
            return digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        }

        Token peek(int ahead) {
            int at = pos + ahead;
            return at < tokens.size() ? tokens.get(at) : null;
        }

        boolean symbol(String s) {
            Token t = peek(0);
            if (t != null && t.kind == Kind.SYMBOL && t.text.equals(s)) {
                pos++;
                return true;
            }
            return false;
        }

        boolean isSymbol(int ahead, String s) {
            Token t = peek(ahead);
            return t != null && t.kind == Kind.SYMBOL && t.text.equals(s);
        }

        boolean isWord(int ahead, String w) {
            Token t = peek(ahead);
            return t != null && t.kind == Kind.WORD && t.text.equalsIgnoreCase(w);
        }

        boolean word(String w) {
            if (isWord(0, w)) {
                pos++;
                return true;
            }
            return false;
        }

        void expect(String s) {
            if (!symbol(s)) {
                throw new Unsupported("expected " + s);
            }
        }

        void expectWord(String w) {
            if (!word(w)) {
                throw new Unsupported("expected " + w);
            }
        }

        Expression expression() {
            return or();
        }

        // a chain of ANDs (of ORs) is one balanced tree of its operands, as Spark's AST builder makes it
        Expression or() {
            List<Expression> operands = new ArrayList<>();
            operands.add(and());
            while (word("or")) {
                operands.add(and());
            }
            return balanced(operands, 0, operands.size() - 1, true);
        }

        Expression and() {
            List<Expression> operands = new ArrayList<>();
            operands.add(not());
            while (word("and")) {
                operands.add(not());
            }
            return balanced(operands, 0, operands.size() - 1, false);
        }

        static Expression balanced(List<Expression> operands, int low, int high, boolean or) {
            if (low == high) {
                return operands.get(low);
            }
            int mid = high - low == 1 ? low : low + (high - low) / 2;
            Expression left = balanced(operands, low, mid, or);
            Expression right = balanced(operands, mid + 1, high, or);
            return or ? new Or(left, right) : new And(left, right);
        }

        Expression not() {
            if (isWord(0, "not")) {
                pos++;
                return new Not(not());
            }
            return predicated();
        }

        Expression predicated() {
            Expression e = comparison();
            boolean negated = false;
            if (isWord(0, "not") && (isWord(1, "in") || isWord(1, "rlike") || isWord(1, "regexp"))) {
                pos++;
                negated = true;
            }
            Expression p;
            if (word("in")) {
                expect("(");
                List<Expression> values = new ArrayList<>();
                values.add(expression());
                while (symbol(",")) {
                    values.add(expression());
                }
                expect(")");
                p = new In(e, seq(values));
            } else if (word("rlike") || word("regexp")) {
                p = new RLike(e, comparison());
            } else if (!negated && isWord(0, "is")) {
                pos++;
                boolean isNot = word("not");
                expectWord("null");
                return isNot ? new IsNotNull(e) : new IsNull(e);
            } else {
                return e;
            }
            return negated ? new Not(p) : p;
        }

        Expression comparison() {
            Expression left = bitOr();
            while (true) {
                Token t = peek(0);
                if (t == null || t.kind != Kind.SYMBOL) {
                    return left;
                }
                switch (t.text) {
                    case "=", "==" -> { pos++; left = new EqualTo(left, bitOr()); }
                    case "<=>" -> { pos++; left = new EqualNullSafe(left, bitOr()); }
                    case "<>", "!=" -> { pos++; left = new Not(new EqualTo(left, bitOr())); }
                    case "<" -> { pos++; left = new LessThan(left, bitOr()); }
                    case "<=" -> { pos++; left = new LessThanOrEqual(left, bitOr()); }
                    case ">" -> { pos++; left = new GreaterThan(left, bitOr()); }
                    case ">=" -> { pos++; left = new GreaterThanOrEqual(left, bitOr()); }
                    default -> { return left; }
                }
            }
        }

        Expression bitOr() {
            Expression left = bitXor();
            while (symbol("|")) {
                left = new BitwiseOr(left, bitXor());
            }
            return left;
        }

        Expression bitXor() {
            Expression left = bitAnd();
            while (symbol("^")) {
                left = new BitwiseXor(left, bitAnd());
            }
            return left;
        }

        Expression bitAnd() {
            Expression left = additive();
            while (symbol("&")) {
                left = new BitwiseAnd(left, additive());
            }
            return left;
        }

        Expression additive() {
            Expression left = multiplicative();
            while (true) {
                if (symbol("+")) {
                    left = new Add(left, multiplicative());
                } else if (symbol("-")) {
                    left = new Subtract(left, multiplicative());
                } else if (symbol("||")) {
                    List<Expression> both = new ArrayList<>();
                    both.add(left);
                    both.add(multiplicative());
                    left = new Concat(seq(both));
                } else {
                    return left;
                }
            }
        }

        Expression multiplicative() {
            Expression left = unary();
            while (true) {
                if (symbol("*")) {
                    left = new Multiply(left, unary());
                } else if (symbol("/")) {
                    left = new Divide(left, unary());
                } else if (symbol("%")) {
                    left = new Remainder(left, unary());
                } else if (word("div")) {
                    left = new IntegralDivide(left, unary());
                } else {
                    return left;
                }
            }
        }

        Expression unary() {
            if (isSymbol(0, "-")) {
                Token next = peek(1);
                if (next != null && next.kind == Kind.NUMBER) {  // Spark's grammar: a number with its sign
                    pos += 2;
                    return postfix(number("-" + next.text));
                }
                throw new Unsupported("unary minus");
            }
            if (isSymbol(0, "+") || isSymbol(0, "~")) {
                throw new Unsupported("unary operator");
            }
            return postfix(primary());
        }

        Expression postfix(Expression e) {
            while (isSymbol(0, ".")) {
                Token field = peek(1);
                if (field == null || !(field.kind == Kind.WORD || field.kind == Kind.QUOTED)) {
                    throw new Unsupported("field");
                }
                List<String> parts;
                if (e instanceof UnresolvedAttribute a) {
                    parts = new ArrayList<>(CollectionConverters.asJava(a.nameParts()));
                } else if (e instanceof UnresolvedNamedLambdaVariable v) {
                    parts = new ArrayList<>(CollectionConverters.asJava(v.nameParts()));
                } else {
                    throw new Unsupported("field of an expression");
                }
                pos += 2;
                parts.add(field.text);
                e = lambdaDepth > 0 ? new UnresolvedNamedLambdaVariable(seq(parts)) : new UnresolvedAttribute(seq(parts));
            }
            if (isSymbol(0, "[")) {
                throw new Unsupported("subscript");
            }
            return e;
        }

        Expression primary() {
            Token t = peek(0);
            if (t == null) {
                throw new Unsupported("end of text");
            }
            switch (t.kind) {
                case STRING -> {
                    pos++;
                    if (peek(0) != null && peek(0).kind == Kind.STRING) {
                        throw new Unsupported("adjacent strings");
                    }
                    return lit(unescape(t.text));
                }
                case NUMBER -> {
                    pos++;
                    return number(t.text);
                }
                case QUOTED -> {
                    pos++;
                    return attribute(t.text);
                }
                case SYMBOL -> {
                    if (t.text.equals("(")) {
                        return parenthesised();
                    }
                    throw new Unsupported("symbol " + t.text);
                }
                default -> {
                    return wordPrimary(t);
                }
            }
        }

        Expression wordPrimary(Token t) {
            String w = t.text.toLowerCase(Locale.ROOT);
            if (peek(1) != null && peek(1).kind == Kind.STRING) {
                throw new Unsupported("typed literal " + t.text);
            }
            switch (w) {
                case "null" -> { pos++; return lit((Object) null); }
                case "true" -> { pos++; return lit(Boolean.TRUE); }
                case "false" -> { pos++; return lit(Boolean.FALSE); }
                case "case" -> { pos++; return caseWhen(); }
                case "cast" -> {
                    if (!isSymbol(1, "(")) {
                        throw new Unsupported("cast");
                    }
                    pos += 2;
                    Expression child = expression();
                    expectWord("as");
                    DataType type = dataType();
                    expect(")");
                    Cast cast = new Cast(child, type, Option.empty());
                    cast.setTagValue(Cast.USER_SPECIFIED_CAST(), BoxedUnit.UNIT);
                    return cast;
                }
                default -> { }
            }
            if (SPECIAL.contains(w)) {
                throw new Unsupported("word " + w);
            }
            if (isSymbol(1, "->")) {  // x -> body
                pos += 2;
                List<String> names = new ArrayList<>();
                names.add(t.text);
                return lambda(names);
            }
            if (isSymbol(1, "(")) {
                pos += 2;
                return call(t.text);
            }
            pos++;
            return attribute(t.text);
        }

        Expression parenthesised() {
            // (a, b) -> body: a lambda; else a parenthesised expression
            int at = 1;
            List<String> names = new ArrayList<>();
            while (true) {
                Token name = peek(at);
                if (name == null || name.kind != Kind.WORD || SPECIAL.contains(name.text.toLowerCase(Locale.ROOT))) {
                    names = null;
                    break;
                }
                names.add(name.text);
                if (isSymbol(at + 1, ",")) {
                    at += 2;
                    continue;
                }
                if (isSymbol(at + 1, ")") && isSymbol(at + 2, "->")) {
                    pos += at + 3;
                    return lambda(names);
                }
                names = null;
                break;
            }
            pos++;
            Expression e = expression();
            if (isSymbol(0, ",")) {
                throw new Unsupported("row constructor");
            }
            expect(")");
            return e;
        }

        Expression lambda(List<String> names) {
            lambdaDepth++;
            Expression body;
            try {
                body = expression();
            } finally {
                lambdaDepth--;
            }
            List<NamedExpression> args = new ArrayList<>();
            for (String name : names) {
                args.add(new UnresolvedNamedLambdaVariable(seq(List.of(name))));
            }
            return new LambdaFunction(body, seq(args), false);
        }

        Expression attribute(String name) {
            if (lambdaDepth > 0) {
                return new UnresolvedNamedLambdaVariable(seq(List.of(name)));
            }
            return new UnresolvedAttribute(seq(List.of(name)));
        }

        Expression call(String name) {
            boolean distinct = false;
            List<Expression> args = new ArrayList<>();
            if (!symbol(")")) {
                if (isWord(0, "distinct")) {
                    pos++;
                    distinct = true;
                } else if (isWord(0, "all")) {
                    throw new Unsupported("all");
                }
                if (isSymbol(0, "*")) {
                    throw new Unsupported("star");
                }
                args.add(expression());
                while (symbol(",")) {
                    args.add(expression());
                }
                expect(")");
            }
            if (isWord(0, "filter") || isWord(0, "over") || isWord(0, "within") || isWord(0, "ignore")
                    || isWord(0, "respect")) {
                throw new Unsupported("clause after a call");
            }
            return new UnresolvedFunction(seq(List.of(name)), seq(args), distinct, Option.empty(), Option.empty(),
                seq(List.of()), false);
        }

        Expression caseWhen() {
            if (!isWord(0, "when")) {
                throw new Unsupported("simple CASE");
            }
            List<Tuple2<Expression, Expression>> branches = new ArrayList<>();
            while (word("when")) {
                Expression condition = expression();
                expectWord("then");
                branches.add(new Tuple2<>(condition, expression()));
            }
            Option<Expression> otherwise = word("else") ? Option.apply(expression()) : Option.empty();
            expectWord("end");
            return new CaseWhen(seq(branches), otherwise);
        }

        DataType dataType() {
            Token t = peek(0);
            if (t == null || t.kind != Kind.WORD) {
                throw new Unsupported("type");
            }
            pos++;
            switch (t.text.toLowerCase(Locale.ROOT)) {
                case "string" -> {
                    if (isWord(0, "collate")) {
                        throw new Unsupported("collation");
                    }
                    return DataTypes.StringType;
                }
                case "boolean" -> { return DataTypes.BooleanType; }
                case "int", "integer" -> { return DataTypes.IntegerType; }
                case "bigint", "long" -> { return DataTypes.LongType; }
                case "smallint", "short" -> { return DataTypes.ShortType; }
                case "tinyint", "byte" -> { return DataTypes.ByteType; }
                case "double" -> { return DataTypes.DoubleType; }
                case "float", "real" -> { return DataTypes.FloatType; }
                case "date" -> { return DataTypes.DateType; }
                case "binary" -> { return DataTypes.BinaryType; }
                case "decimal", "dec", "numeric" -> {
                    if (!symbol("(")) {
                        return DataTypes.createDecimalType(10, 0);
                    }
                    int precision = Integer.parseInt(integer());
                    int scale = symbol(",") ? Integer.parseInt(integer()) : 0;
                    expect(")");
                    return DataTypes.createDecimalType(precision, scale);
                }
                default -> throw new Unsupported("type " + t.text);
            }
        }

        String integer() {
            Token t = peek(0);
            if (t == null || t.kind != Kind.NUMBER || !t.text.chars().allMatch(ch -> ch >= '0' && ch <= '9')) {
                throw new Unsupported("integer");
            }
            pos++;
            return t.text;
        }

        Expression number(String text) {
            String body = text.startsWith("-") ? text.substring(1) : text;
            if (!body.isEmpty() && body.chars().allMatch(ch -> ch >= '0' && ch <= '9')) {
                BigDecimal v = new BigDecimal(text);
                try {
                    return lit(v.intValueExact());
                } catch (ArithmeticException notInt) {
                    try {
                        return lit(v.longValueExact());
                    } catch (ArithmeticException notLong) {
                        return lit(v);
                    }
                }
            }
            if (body.endsWith("L") && body.substring(0, body.length() - 1).chars().allMatch(ch -> ch >= '0' && ch <= '9')
                    && body.length() > 1) {
                return lit(Long.parseLong(text.substring(0, text.length() - 1)));
            }
            if (body.matches("[0-9]*\\.[0-9]*") && body.matches(".*[0-9].*")) {
                return lit(new BigDecimal(text));
            }
            throw new Unsupported("number " + text);
        }

        String unescape(String raw) {
            if (raw.indexOf('\\') < 0) {
                return raw;
            }
            if (escapedStrings) {
                throw new Unsupported("escaped string literals");
            }
            StringBuilder out = new StringBuilder(raw.length());
            for (int i = 0; i < raw.length(); i++) {
                char c = raw.charAt(i);
                if (c != '\\') {
                    out.append(c);
                    continue;
                }
                char d = raw.charAt(++i);
                switch (d) {
                    case '\\' -> out.append('\\');
                    case '\'' -> out.append('\'');
                    case '"' -> out.append('"');
                    case 'n' -> out.append('\n');
                    case 't' -> out.append('\t');
                    case 'r' -> out.append('\r');
                    case 'u' -> {  // backslash, u and four hexadecimal digits: one UTF-16 unit, as Spark reads it
                        if (i + 4 >= raw.length()) {
                            throw new Unsupported("short \\u escape");
                        }
                        int code = 0;
                        for (int k = 1; k <= 4; k++) {
                            int digit = Character.digit(raw.charAt(i + k), 16);
                            if (digit < 0) {
                                throw new Unsupported("\\u escape");
                            }
                            code = (code << 4) + digit;
                        }
                        out.append((char) code);
                        i += 4;
                    }
                    default -> throw new Unsupported("escape \\" + d);
                }
            }
            return out.toString();
        }
    }

    private static Expression lit(Object value) {
        return Literal$.MODULE$.apply(value);
    }

    private static <T> scala.collection.immutable.Seq<T> seq(List<T> items) {
        return CollectionConverters.asScala(items).toList();
    }
}
