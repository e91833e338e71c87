/* --fail-if expressions: a lexer, a recursive-descent parser that builds a
 * small tree (checking at parse time that comparisons and values sit where
 * they belong), and an evaluator that also renders the explanation.
 *
 * Every recursion is bounded by MAX_DEPTH, on hostile input too: the parser
 * counts its own nesting ('(', function calls, unary minus), and every node
 * records how deep the evaluator must recurse below it. A flat chain of one
 * binding ('1+1+...+1', 'a && b && ...') is walked in a loop, by the
 * evaluator and by node_free alike, so it adds no depth however long it is;
 * only real nesting counts. */
#include "failif.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Deeper nesting than this is surely not a gate anyone writes; the bound keeps
 * the recursion off the end of the stack on hostile input. It bounds both the
 * parser's nesting and the recursion depth of the tree. */
#define MAX_DEPTH 200

typedef enum {
    T_END,
    T_NUM,
    T_NAME,
    T_LPAREN,
    T_RPAREN,
    T_COMMA,
    T_PLUS,
    T_MINUS,
    T_STAR,
    T_SLASH,
    T_LT,
    T_LE,
    T_GT,
    T_GE,
    T_EQ,
    T_NE,
    T_AND,
    T_OR,
} tok_kind;

typedef struct {
    tok_kind kind;
    int col;      /* 1-based column of the first character */
    size_t start; /* byte offset into the text */
    size_t len;
    double num;
} token;

typedef enum {
    N_NUM,
    N_NAME,
    N_NEG,
    N_ADD,
    N_SUB,
    N_MUL,
    N_DIV,
    N_LT,
    N_LE,
    N_GT,
    N_GE,
    N_EQ,
    N_NE,
    N_AND,
    N_OR,
    N_ABS,
    N_MIN,
    N_MAX,
} node_kind;

typedef struct fnode {
    node_kind kind;
    int col;     /* where the node's text starts (its '(' when parenthesised) */
    int op_col;  /* the operator's column, for binary nodes */
    int height;  /* recursion levels the evaluator needs here, this one included */
    double num;  /* N_NUM */
    char *text;  /* N_NUM: the literal as written; N_NAME: the name */
    struct fnode *a, *b;
} fnode;

struct tsim_failif {
    char *text;
    fnode *root;
};

/* ---------- small helpers ---------- */

static bool is_alpha(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static bool is_alnum(int c)
{
    return is_alpha(c) || is_digit(c);
}

static char *dup_span(const char *s, size_t len)
{
    char *d = malloc(len + 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

static bool is_comparison(node_kind k)
{
    return k >= N_LT && k <= N_OR;
}

static const char *op_text(node_kind k)
{
    switch (k) {
    case N_NEG:
    case N_SUB:
        return "-";
    case N_ADD:
        return "+";
    case N_MUL:
        return "*";
    case N_DIV:
        return "/";
    case N_LT:
        return "<";
    case N_LE:
        return "<=";
    case N_GT:
        return ">";
    case N_GE:
        return ">=";
    case N_EQ:
        return "==";
    case N_NE:
        return "!=";
    case N_AND:
        return "&&";
    case N_OR:
        return "||";
    case N_ABS:
        return "abs";
    case N_MIN:
        return "min";
    case N_MAX:
        return "max";
    default:
        return "?";
    }
}

/* Binding strength, for putting back only the parentheses that matter. */
static int precedence(node_kind k)
{
    switch (k) {
    case N_OR:
        return 1;
    case N_AND:
        return 2;
    case N_LT:
    case N_LE:
    case N_GT:
    case N_GE:
    case N_EQ:
    case N_NE:
        return 3;
    case N_ADD:
    case N_SUB:
        return 4;
    case N_MUL:
    case N_DIV:
        return 5;
    case N_NEG:
        return 6;
    default:
        return 7;
    }
}

/* Down the left side in a loop: a flat chain's tree is as deep as it is
 * long, and only right children (bounded by the height) recurse. */
static void node_free(fnode *n)
{
    while (n) {
        fnode *next = n->a;
        node_free(n->b);
        free(n->text);
        free(n);
        n = next;
    }
}

/* Whether a binary node of this kind continues the chain of its left child
 * a ('a + b - c', '&&' after '&&'): the evaluator then walks down to a in a
 * loop. Comparisons do not chain; unary minus and calls nest. */
static bool chains_left(node_kind kind, const fnode *a)
{
    int p = precedence(kind);
    return a && a->b && precedence(a->kind) == p && (p == 1 || p == 2 || p == 4 || p == 5);
}

static fnode *node_new(node_kind kind, int col)
{
    fnode *n = calloc(1, sizeof *n);
    if (n) {
        n->kind = kind;
        n->col = col;
        n->op_col = col;
        n->height = 1;
    }
    return n;
}

/* ---------- errors ---------- */

typedef struct {
    const char *text;
    token *toks;
    size_t ntok, cap;
    size_t pos;
    int depth;
    tsim_error *err;
} parser;

/* Messages quote the expression, shortened when it is long. */
#define QUOTE_MAX 160
#define QUOTE_LEN(t) (strlen(t) > QUOTE_MAX ? QUOTE_MAX : (int)strlen(t))
#define QUOTE_MORE(t) (strlen(t) > QUOTE_MAX ? "..." : "")
#define QUOTE(t) QUOTE_LEN(t), (t), QUOTE_MORE(t)

static int syntax_error(const parser *p, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int syntax_error(const parser *p, int col, const char *fmt, ...)
{
    char what[TSIM_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return tsim_error_set(p->err, TSIM_E_INPUT, "--fail-if '%.*s%s': column %d: %s", QUOTE(p->text), col, what);
}

static int out_of_memory(tsim_error *err)
{
    return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory in --fail-if");
}

static int too_deep(const parser *p, int col)
{
    return syntax_error(p, col, "expression nested too deeply (more than %d levels)", MAX_DEPTH);
}

/* Hangs a and b (either may be NULL) under n and records n's height. False,
 * with the error set, when evaluating n would recurse deeper than MAX_DEPTH;
 * the caller then frees n, children included. */
static bool adopt(const parser *p, fnode *n, fnode *a, fnode *b, int col)
{
    n->a = a;
    n->b = b;
    int below = 0;
    if (a && a->height > below)
        below = a->height;
    if (b && b->height > below)
        below = b->height;
    n->height = below + 1;
    /* The chain below costs no recursion, only the right operand does. */
    if (b && chains_left(n->kind, a))
        n->height = a->height > b->height + 1 ? a->height : b->height + 1;
    if (n->height > MAX_DEPTH) {
        too_deep(p, col);
        return false;
    }
    return true;
}

/* "'x'" for a token, "the end of the expression" for the end. */
static void describe(const parser *p, const token *t, char *buf, size_t size)
{
    if (t->kind == T_END) {
        snprintf(buf, size, "the end of the expression");
        return;
    }
    int len = t->len > 40 ? 40 : (int)t->len;
    snprintf(buf, size, "'%.*s%s'", len, p->text + t->start, t->len > 40 ? "..." : "");
}

/* ---------- lexer ---------- */

static int push_token(parser *p, tok_kind kind, size_t start, size_t len, double num)
{
    if (p->ntok == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        token *t = realloc(p->toks, cap * sizeof *t);
        if (!t)
            return out_of_memory(p->err);
        p->toks = t;
        p->cap = cap;
    }
    p->toks[p->ntok++] = (token){kind, (int)start + 1, start, len, num};
    return TSIM_OK;
}

/* A number: digits, an optional fraction, an optional exponent. Anything
 * name-like glued to it ("1.2.3", "3abc", "1e") makes it a bad number rather
 * than a number followed by a surprise. */
static int lex_number(parser *p, size_t *i)
{
    const char *s = p->text;
    size_t start = *i, j = *i;
    while (is_digit(s[j]))
        j++;
    if (s[j] == '.') {
        j++;
        while (is_digit(s[j]))
            j++;
    }
    if ((s[j] == 'e' || s[j] == 'E') &&
        (is_digit(s[j + 1]) || ((s[j + 1] == '+' || s[j + 1] == '-') && is_digit(s[j + 2])))) {
        j += 2;
        while (is_digit(s[j]))
            j++;
    }
    size_t good_end = j;
    while (is_alnum(s[j]) || s[j] == '_' || s[j] == '.')
        j++;
    size_t len = j - start;
    int shown = len > 40 ? 40 : (int)len;
    if (j != good_end)
        return syntax_error(p, (int)start + 1, "bad number '%.*s'", shown, s + start);
    char *lit = dup_span(s + start, len);
    if (!lit)
        return out_of_memory(p->err);
    errno = 0;
    char *end = NULL;
    double v = strtod(lit, &end);
    bool ok = end && *end == '\0';
    bool overflow = ok && isinf(v);
    free(lit);
    if (!ok)
        return syntax_error(p, (int)start + 1, "bad number '%.*s'", shown, s + start);
    if (overflow)
        return syntax_error(p, (int)start + 1, "number out of range '%.*s'", shown, s + start);
    *i = j;
    return push_token(p, T_NUM, start, len, v);
}

/* A name: a letter, then letters, digits, '_', '.', and '-' only between two
 * letters or digits ("taot-split.rho_after.p95"). */
static size_t name_end(const char *s, size_t i)
{
    i++;
    for (;;) {
        char c = s[i];
        if (is_alnum(c) || c == '_' || c == '.')
            i++;
        else if (c == '-' && is_alnum(s[i - 1]) && is_alnum(s[i + 1]))
            i++;
        else
            return i;
    }
}

static int lex(parser *p)
{
    const char *s = p->text;
    size_t i = 0;
    while (s[i]) {
        char c = s[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            i++;
            continue;
        }
        int rc = TSIM_OK;
        if (is_digit(c) || (c == '.' && is_digit(s[i + 1]))) {
            rc = lex_number(p, &i);
            if (rc)
                return rc;
            continue;
        }
        if (is_alpha(c)) {
            size_t end = name_end(s, i);
            rc = push_token(p, T_NAME, i, end - i, 0);
            i = end;
            if (rc)
                return rc;
            continue;
        }
        tok_kind kind;
        size_t len = 1;
        char next = s[i + 1];
        switch (c) {
        case '(':
            kind = T_LPAREN;
            break;
        case ')':
            kind = T_RPAREN;
            break;
        case ',':
            kind = T_COMMA;
            break;
        case '+':
            kind = T_PLUS;
            break;
        case '-':
            kind = T_MINUS;
            break;
        case '*':
            kind = T_STAR;
            break;
        case '/':
            kind = T_SLASH;
            break;
        case '<':
            kind = next == '=' ? T_LE : T_LT;
            len = next == '=' ? 2 : 1;
            break;
        case '>':
            kind = next == '=' ? T_GE : T_GT;
            len = next == '=' ? 2 : 1;
            break;
        case '=':
            if (next != '=')
                return syntax_error(p, (int)i + 1, "'=' is not an operator; use '==' to compare");
            kind = T_EQ;
            len = 2;
            break;
        case '!':
            if (next != '=')
                return syntax_error(p, (int)i + 1, "'!' is not an operator; use '!=' to compare");
            kind = T_NE;
            len = 2;
            break;
        case '&':
            if (next != '&')
                return syntax_error(p, (int)i + 1, "'&' is not an operator; use '&&'");
            kind = T_AND;
            len = 2;
            break;
        case '|':
            if (next != '|')
                return syntax_error(p, (int)i + 1, "'|' is not an operator; use '||'");
            kind = T_OR;
            len = 2;
            break;
        default:
            if ((unsigned char)c >= 0x21 && (unsigned char)c < 0x7f)
                return syntax_error(p, (int)i + 1, "unexpected character '%c'", c);
            return syntax_error(p, (int)i + 1, "unexpected byte 0x%02x", (unsigned)(unsigned char)c);
        }
        rc = push_token(p, kind, i, len, 0);
        if (rc)
            return rc;
        i += len;
    }
    return push_token(p, T_END, i, 0, 0);
}

/* ---------- parser ---------- */

static const token *cur(const parser *p)
{
    return &p->toks[p->pos];
}

static fnode *parse_or(parser *p);

static fnode *fail(fnode *a, fnode *b)
{
    node_free(a);
    node_free(b);
    return NULL;
}

/* Operands of arithmetic and comparisons must be values, not comparisons. */
static bool check_value(parser *p, const fnode *n, const char *role, const char *op)
{
    if (!is_comparison(n->kind))
        return true;
    syntax_error(p, n->col, "a comparison cannot be %s of '%s'", role, op);
    return false;
}

static fnode *parse_call(parser *p, node_kind kind, const token *name_tok)
{
    int want = kind == N_ABS ? 1 : 2;
    const char *fname = op_text(kind);
    p->pos += 2; /* the name and '(' */
    fnode *args[2] = {NULL, NULL};
    int count = 0;
    for (;;) {
        fnode *arg = parse_or(p);
        if (!arg)
            return fail(args[0], args[1]);
        if (!check_value(p, arg, "an argument", fname)) {
            node_free(arg);
            return fail(args[0], args[1]);
        }
        if (count < 2)
            args[count] = arg;
        else
            node_free(arg);
        count++;
        if (cur(p)->kind == T_COMMA) {
            p->pos++;
            continue;
        }
        if (cur(p)->kind == T_RPAREN) {
            p->pos++;
            break;
        }
        char found[64];
        describe(p, cur(p), found, sizeof found);
        syntax_error(p, cur(p)->col, "expected ',' or ')' in the call of '%s' at column %d, found %s", fname,
                     name_tok->col, found);
        return fail(args[0], args[1]);
    }
    if (count != want) {
        syntax_error(p, name_tok->col, "'%s' takes %d argument%s, found %d", fname, want, want == 1 ? "" : "s",
                     count);
        return fail(args[0], args[1]);
    }
    fnode *n = node_new(kind, name_tok->col);
    if (!n) {
        out_of_memory(p->err);
        return fail(args[0], args[1]);
    }
    if (!adopt(p, n, args[0], args[1], name_tok->col))
        return fail(n, NULL);
    return n;
}

static fnode *parse_unary(parser *p);

static fnode *parse_unary_inner(parser *p)
{
    const token *t = cur(p);
    char found[64];
    switch (t->kind) {
    case T_MINUS: {
        p->pos++;
        /* Through parse_unary, so that '---...-1' counts against the depth. */
        fnode *child = parse_unary(p);
        if (!child)
            return NULL;
        if (!check_value(p, child, "an operand", "-"))
            return fail(child, NULL);
        fnode *n = node_new(N_NEG, t->col);
        if (!n) {
            out_of_memory(p->err);
            return fail(child, NULL);
        }
        if (!adopt(p, n, child, NULL, t->col))
            return fail(n, NULL);
        return n;
    }
    case T_LPAREN: {
        p->pos++;
        fnode *inner = parse_or(p);
        if (!inner)
            return NULL;
        if (cur(p)->kind != T_RPAREN) {
            describe(p, cur(p), found, sizeof found);
            syntax_error(p, cur(p)->col, "expected ')' to close the '(' at column %d, found %s", t->col, found);
            return fail(inner, NULL);
        }
        p->pos++;
        inner->col = t->col;
        return inner;
    }
    case T_NUM: {
        p->pos++;
        fnode *n = node_new(N_NUM, t->col);
        if (!n || !(n->text = dup_span(p->text + t->start, t->len))) {
            out_of_memory(p->err);
            return fail(n, NULL);
        }
        n->num = t->num;
        return n;
    }
    case T_NAME: {
        if (p->toks[p->pos + 1].kind == T_LPAREN) {
            const char *s = p->text + t->start;
            if (t->len == 3 && memcmp(s, "abs", 3) == 0)
                return parse_call(p, N_ABS, t);
            if (t->len == 3 && memcmp(s, "min", 3) == 0)
                return parse_call(p, N_MIN, t);
            if (t->len == 3 && memcmp(s, "max", 3) == 0)
                return parse_call(p, N_MAX, t);
            describe(p, t, found, sizeof found);
            syntax_error(p, t->col, "unknown function %s; the functions are abs, min and max", found);
            return NULL;
        }
        p->pos++;
        fnode *n = node_new(N_NAME, t->col);
        if (!n || !(n->text = dup_span(p->text + t->start, t->len))) {
            out_of_memory(p->err);
            return fail(n, NULL);
        }
        return n;
    }
    default:
        describe(p, t, found, sizeof found);
        if (p->pos == 0) {
            syntax_error(p, t->col, "expected a number, a name or '(', found %s", found);
        } else {
            const token *prev = &p->toks[p->pos - 1];
            syntax_error(p, t->col, "expected a number, a name or '(' after '%.*s', found %s", (int)prev->len,
                         p->text + prev->start, found);
        }
        return NULL;
    }
}

static fnode *parse_unary(parser *p)
{
    if (++p->depth > MAX_DEPTH) {
        too_deep(p, cur(p)->col);
        return NULL;
    }
    fnode *n = parse_unary_inner(p);
    p->depth--;
    return n;
}

static fnode *binary(parser *p, node_kind kind, fnode *a, fnode *b, int op_col)
{
    fnode *n = node_new(kind, a->col);
    if (!n) {
        out_of_memory(p->err);
        return fail(a, b);
    }
    n->op_col = op_col;
    if (!adopt(p, n, a, b, op_col))
        return fail(n, NULL);
    return n;
}

typedef fnode *(*parse_fn)(parser *p);

/* One left-associative level of arithmetic: left (op right)*. */
static fnode *parse_arith(parser *p, parse_fn operand, tok_kind op1, node_kind kind1, tok_kind op2, node_kind kind2)
{
    fnode *left = operand(p);
    if (!left)
        return NULL;
    for (;;) {
        const token *t = cur(p);
        if (t->kind != op1 && t->kind != op2)
            return left;
        node_kind kind = t->kind == op1 ? kind1 : kind2;
        int op_col = t->col;
        p->pos++;
        if (!check_value(p, left, "an operand", op_text(kind)))
            return fail(left, NULL);
        fnode *right = operand(p);
        if (!right)
            return fail(left, NULL);
        if (!check_value(p, right, "an operand", op_text(kind)))
            return fail(left, right);
        left = binary(p, kind, left, right, op_col);
        if (!left)
            return NULL;
    }
}

static fnode *parse_prod(parser *p)
{
    return parse_arith(p, parse_unary, T_STAR, N_MUL, T_SLASH, N_DIV);
}

static fnode *parse_sum(parser *p)
{
    return parse_arith(p, parse_prod, T_PLUS, N_ADD, T_MINUS, N_SUB);
}

static bool comparison_token(tok_kind k, node_kind *out)
{
    static const struct {
        tok_kind t;
        node_kind n;
    } map[] = {{T_LT, N_LT}, {T_LE, N_LE}, {T_GT, N_GT}, {T_GE, N_GE}, {T_EQ, N_EQ}, {T_NE, N_NE}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        if (map[i].t == k) {
            *out = map[i].n;
            return true;
        }
    }
    return false;
}

static fnode *parse_cmp(parser *p)
{
    fnode *left = parse_sum(p);
    if (!left)
        return NULL;
    node_kind kind;
    if (!comparison_token(cur(p)->kind, &kind))
        return left;
    int op_col = cur(p)->col;
    p->pos++;
    if (!check_value(p, left, "an operand", op_text(kind)))
        return fail(left, NULL);
    fnode *right = parse_sum(p);
    if (!right)
        return fail(left, NULL);
    if (!check_value(p, right, "an operand", op_text(kind)))
        return fail(left, right);
    node_kind again;
    if (comparison_token(cur(p)->kind, &again)) {
        syntax_error(p, cur(p)->col, "comparisons cannot be chained; join them with '&&'");
        return fail(left, right);
    }
    return binary(p, kind, left, right, op_col);
}

/* One left-associative logical level: both sides must be comparisons. */
static fnode *parse_logic(parser *p, parse_fn operand, tok_kind op, node_kind kind)
{
    fnode *left = operand(p);
    if (!left)
        return NULL;
    while (cur(p)->kind == op) {
        int op_col = cur(p)->col;
        p->pos++;
        if (!is_comparison(left->kind)) {
            syntax_error(p, left->col, "expected a comparison before '%s', found a value", op_text(kind));
            return fail(left, NULL);
        }
        fnode *right = operand(p);
        if (!right)
            return fail(left, NULL);
        if (!is_comparison(right->kind)) {
            syntax_error(p, right->col, "expected a comparison after '%s', found a value", op_text(kind));
            return fail(left, right);
        }
        left = binary(p, kind, left, right, op_col);
        if (!left)
            return NULL;
    }
    return left;
}

static fnode *parse_and(parser *p)
{
    return parse_logic(p, parse_cmp, T_AND, N_AND);
}

static fnode *parse_or(parser *p)
{
    return parse_logic(p, parse_and, T_OR, N_OR);
}

int tsim_failif_parse(const char *expr, tsim_failif **out, tsim_error *err)
{
    *out = NULL;
    if (!expr)
        expr = "";
    parser p = {.text = expr, .err = err};
    int rc = lex(&p);
    if (rc) {
        free(p.toks);
        return rc;
    }
    if (p.ntok == 1) {
        free(p.toks);
        return tsim_error_set(err, TSIM_E_INPUT, "--fail-if '%.*s%s': empty expression", QUOTE(expr));
    }
    fnode *root = parse_or(&p);
    if (root && cur(&p)->kind != T_END) {
        char found[64];
        describe(&p, cur(&p), found, sizeof found);
        if (cur(&p)->kind == T_RPAREN)
            syntax_error(&p, cur(&p)->col, "unmatched ')'");
        else
            syntax_error(&p, cur(&p)->col, "expected an operator or the end of the expression, found %s", found);
        root = fail(root, NULL);
    }
    if (root && !is_comparison(root->kind)) {
        syntax_error(&p, root->col, "expected a comparison (such as 'taot.rho_after.p95 > 0.05'), found a value");
        root = fail(root, NULL);
    }
    free(p.toks);
    if (!root)
        return err ? err->code : TSIM_E_INPUT;
    tsim_failif *f = malloc(sizeof *f);
    char *text = dup_span(expr, strlen(expr));
    if (!f || !text) {
        free(f);
        free(text);
        node_free(root);
        return out_of_memory(err);
    }
    f->text = text;
    f->root = root;
    *out = f;
    return TSIM_OK;
}

void tsim_failif_free(tsim_failif *f)
{
    if (!f)
        return;
    node_free(f->root);
    free(f->text);
    free(f);
}

const char *tsim_failif_text(const tsim_failif *f)
{
    return f ? f->text : NULL;
}

/* ---------- evaluation and explanation ---------- */

typedef struct {
    char *buf;
    size_t len, cap;
    bool oom;
} strbuf;

static void sb_add(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_add(strbuf *sb, const char *fmt, ...)
{
    if (sb->oom)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        sb->oom = true;
        return;
    }
    if (sb->len + (size_t)n + 1 > sb->cap) {
        size_t cap = sb->cap ? sb->cap : 128;
        while (cap < sb->len + (size_t)n + 1)
            cap *= 2;
        char *b = realloc(sb->buf, cap);
        if (!b) {
            sb->oom = true;
            return;
        }
        sb->buf = b;
        sb->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

typedef struct {
    const tsim_failif *f;
    tsim_failif_lookup lookup;
    void *ctx;
    strbuf sb;
    tsim_error *err;
} evaluator;

static int eval_node(evaluator *ev, const fnode *n, double *v);
static int eval_chain(evaluator *ev, const fnode *n, double *v);

/* Renders a child, in parentheses when its binding is weaker than the
 * parent's (or equal, on the right: the tree is left associative). */
static int eval_child(evaluator *ev, const fnode *parent, const fnode *child, bool right, double *v)
{
    int pp = precedence(parent->kind), cp = precedence(child->kind);
    bool paren = cp < pp || (right && cp == pp);
    if (paren)
        sb_add(&ev->sb, "(");
    int rc = eval_node(ev, child, v);
    if (paren)
        sb_add(&ev->sb, ")");
    return rc;
}

/* A side of a comparison; a compound one also shows its value. */
static int eval_side(evaluator *ev, const fnode *parent, const fnode *side, bool right, double *v)
{
    int rc = eval_child(ev, parent, side, right, v);
    if (rc)
        return rc;
    bool simple = side->kind == N_NUM || side->kind == N_NAME || (side->kind == N_NEG && side->a->kind == N_NUM);
    if (!simple)
        sb_add(&ev->sb, " [= %.6g]", *v);
    return TSIM_OK;
}

static int eval_node(evaluator *ev, const fnode *n, double *v)
{
    double a = 0, b = 0;
    int rc;
    switch (n->kind) {
    case N_NUM:
        *v = n->num;
        sb_add(&ev->sb, "%s", n->text);
        return TSIM_OK;
    case N_NAME:
        rc = ev->lookup(ev->ctx, n->text, v);
        if (rc == TSIM_FAILIF_UNMEASURED)
            return tsim_error_set(ev->err, TSIM_E_INPUT,
                                  "--fail-if '%.*s%s': '%s' was not measured in this run (its option is off: "
                                  "--bounds, --capacity-factor, --step-model, --timing; or it is n/a for this planner)",
                                  QUOTE(ev->f->text), n->text);
        if (rc != 0) {
            if (strchr(n->text, '-'))
                return tsim_error_set(ev->err, TSIM_E_INPUT,
                                      "--fail-if '%.*s%s': unknown name '%s' (a '-' between letters or digits is "
                                      "part of a name; write 'a - b' to subtract)",
                                      QUOTE(ev->f->text), n->text);
            return tsim_error_set(ev->err, TSIM_E_INPUT, "--fail-if '%.*s%s': unknown name '%s'",
                                  QUOTE(ev->f->text), n->text);
        }
        if (isnan(*v))
            return tsim_error_set(ev->err, TSIM_E_INPUT, "--fail-if '%.*s%s': '%s' has no value (NaN)",
                                  QUOTE(ev->f->text), n->text);
        sb_add(&ev->sb, "%s (%.6g)", n->text, *v);
        return TSIM_OK;
    case N_NEG:
        sb_add(&ev->sb, "-");
        /* -(-x) rather than --x, which reads like a typo. */
        rc = eval_child(ev, n, n->a, n->a->kind == N_NEG, &a);
        *v = -a;
        return rc;
    case N_ABS:
    case N_MIN:
    case N_MAX:
        sb_add(&ev->sb, "%s(", op_text(n->kind));
        rc = eval_node(ev, n->a, &a);
        if (rc)
            return rc;
        if (n->kind == N_ABS) {
            *v = fabs(a);
        } else {
            sb_add(&ev->sb, ", ");
            rc = eval_node(ev, n->b, &b);
            if (rc)
                return rc;
            *v = n->kind == N_MIN ? (a < b ? a : b) : (a > b ? a : b);
        }
        sb_add(&ev->sb, ")");
        return TSIM_OK;
    default:
        break;
    }
    return eval_chain(ev, n, v);
}

/* a op b for a binary node n. */
static int apply(evaluator *ev, const fnode *n, double a, double b, double *v)
{
    switch (n->kind) {
    case N_ADD:
        *v = a + b;
        break;
    case N_SUB:
        *v = a - b;
        break;
    case N_MUL:
        *v = a * b;
        break;
    case N_DIV:
        if (b == 0)
            return tsim_error_set(ev->err, TSIM_E_INPUT, "--fail-if '%.*s%s': column %d: division by zero",
                                  QUOTE(ev->f->text), n->op_col);
        *v = a / b;
        break;
    case N_LT:
        *v = a < b;
        break;
    case N_LE:
        *v = a <= b;
        break;
    case N_GT:
        *v = a > b;
        break;
    case N_GE:
        *v = a >= b;
        break;
    case N_EQ:
        *v = a == b;
        break;
    case N_NE:
        *v = a != b;
        break;
    case N_AND:
        *v = a != 0 && b != 0;
        break;
    case N_OR:
        *v = a != 0 || b != 0;
        break;
    default:
        return tsim_error_set(ev->err, TSIM_E_INTERNAL, "--fail-if: unknown node kind %d", (int)n->kind);
    }
    return TSIM_OK;
}

/* A binary node and the chain of its binding below it, left to right in a
 * loop (a comparison is a chain of one). Both sides are always evaluated, so
 * that every name is checked whatever the outcome. */
static int eval_chain(evaluator *ev, const fnode *n, double *v)
{
    size_t len = 1;
    for (const fnode *m = n; chains_left(m->kind, m->a); m = m->a)
        len++;
    const fnode **spine = malloc(len * sizeof *spine);
    if (!spine)
        return out_of_memory(ev->err);
    spine[0] = n;
    for (size_t i = 1; i < len; i++)
        spine[i] = spine[i - 1]->a;
    bool cmp = precedence(n->kind) == 3;
    const fnode *bottom = spine[len - 1];
    double acc = 0, b = 0;
    int rc = cmp ? eval_side(ev, bottom, bottom->a, false, &acc) : eval_child(ev, bottom, bottom->a, false, &acc);
    for (size_t i = len; rc == TSIM_OK && i-- > 0;) {
        const fnode *m = spine[i];
        sb_add(&ev->sb, " %s ", op_text(m->kind));
        rc = cmp ? eval_side(ev, m, m->b, true, &b) : eval_child(ev, m, m->b, true, &b);
        if (rc == TSIM_OK)
            rc = apply(ev, m, acc, b, &acc);
    }
    free(spine);
    *v = acc;
    return rc;
}

/* Copies an explanation into size bytes; a longer one keeps its head and
 * its tail (where the values and the verdict are), joined by " ... ". */
static void shorten(const char *text, size_t len, char *out, size_t size)
{
    static const char gap[] = " ... ";
    if (len < size || size < 2 * sizeof gap) {
        snprintf(out, size, "%s", text);
        return;
    }
    size_t keep = size - sizeof gap; /* characters kept, besides the gap and the NUL */
    size_t tail = keep / 3, head = keep - tail;
    memcpy(out, text, head);
    memcpy(out + head, gap, sizeof gap - 1);
    memcpy(out + head + sizeof gap - 1, text + len - tail, tail);
    out[size - 1] = '\0';
}

int tsim_failif_eval(const tsim_failif *f, tsim_failif_lookup lookup, void *ctx, bool *holds, char *explain,
                     size_t explain_size, tsim_error *err)
{
    *holds = false;
    if (explain && explain_size)
        explain[0] = '\0';
    evaluator ev = {.f = f, .lookup = lookup, .ctx = ctx, .err = err};
    double v = 0;
    int rc = eval_node(&ev, f->root, &v);
    if (rc == TSIM_OK && ev.sb.oom)
        rc = out_of_memory(err);
    if (rc == TSIM_OK) {
        *holds = v != 0;
        if (explain && explain_size)
            shorten(ev.sb.buf ? ev.sb.buf : "", ev.sb.len, explain, explain_size);
    }
    free(ev.sb.buf);
    return rc;
}

int tsim_failif_check(const char *expr, tsim_failif_lookup lookup, void *ctx, tsim_error *err)
{
    tsim_failif *f = NULL;
    int rc = tsim_failif_parse(expr, &f, err);
    if (rc)
        return rc;
    bool holds = false;
    /* Room for the quoted expression in front, so that the tail shows. */
    char explain[TSIM_ERROR_MSG_MAX - 256];
    rc = tsim_failif_eval(f, lookup, ctx, &holds, explain, sizeof explain, err);
    if (rc == TSIM_OK && holds)
        rc = tsim_error_set(err, TSIM_E_CHECK, "--fail-if '%.*s%s' holds: %s", QUOTE(f->text), explain);
    tsim_failif_free(f);
    return rc;
}
