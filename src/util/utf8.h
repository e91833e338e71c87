/* JSON text must be UTF-8 (RFC 8259), but file names, tags and labels come
 * from the user's bytes. */
#ifndef TSIM_UTF8_H
#define TSIM_UTF8_H

/* A malloc'ed copy of JSON text in which every byte that is not part of a
 * valid UTF-8 sequence is replaced by the escape \ufffd (such bytes can only
 * sit inside JSON strings, where the escape is legal). The input itself when
 * it is already valid (no copy: compare the pointers); NULL when out of memory. */
char *tsim_utf8_repair_json(char *text);

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when s starts an invalid one. */
int tsim_utf8_sequence(const unsigned char *s);

#endif
