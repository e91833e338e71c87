#include "utf8.h"

#include <stdlib.h>
#include <string.h>

int tsim_utf8_sequence(const unsigned char *s)
{
    const unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    int n;
    unsigned min;
    unsigned cp;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        cp = c & 0x1f;
        min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        cp = c & 0x0f;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        cp = c & 0x07;
        min = 0x10000;
    } else {
        return 0;
    }
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    /* overlong forms, surrogates and code points past U+10FFFF are invalid */
    if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
        return 0;
    return n;
}

char *tsim_utf8_repair_json(char *text)
{
    size_t bad = 0, len = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p;) {
        int n = tsim_utf8_sequence(p);
        bad += n == 0;
        p += n ? n : 1;
    }
    if (bad == 0)
        return text;
    len = strlen(text);
    char *out = malloc(len + bad * 5 + 1);
    if (!out)
        return NULL;
    char *o = out;
    for (const unsigned char *p = (const unsigned char *)text; *p;) {
        int n = tsim_utf8_sequence(p);
        if (n == 0) {
            memcpy(o, "\\ufffd", 6);
            o += 6;
            p++;
        } else {
            memcpy(o, p, (size_t)n);
            o += n;
            p += n;
        }
    }
    *o = '\0';
    return out;
}
