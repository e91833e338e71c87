/* CRC-32 by folding (carry-less multiplication, x86-64 PCLMULQDQ): four
 * 128-bit lanes each fold 64 bytes ahead, then one lane, then a Barrett
 * reduction to 32 bits; the tail and CPUs without PCLMULQDQ go to zlib.
 * The constants are powers of x modulo the bit-reflected CRC-32 polynomial:
 * x^(4*128+32) and x^(4*128-32) fold four lanes, x^(128+32) and x^(128-32)
 * one, x^64 the last 64 bits, and mu = x^64 / P with P for Barrett. */
#include "crc32_fast.h"

#include <zlib.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

__attribute__((target("pclmul,sse4.1"))) static uint32_t fold(uint32_t state, const unsigned char *p, size_t len)
{
    const __m128i k1k2 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
    const __m128i k3k4 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
    const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124);
    const __m128i poly = _mm_set_epi64x(0x1f7011641, 0x1db710641);
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)state));
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    p += 64;
    len -= 64;
#define FOLD(x, k, next)                                                                                               \
    _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next)
    for (; len >= 64; p += 64, len -= 64) {
        x0 = FOLD(x0, k1k2, _mm_loadu_si128((const __m128i *)p));
        x1 = FOLD(x1, k1k2, _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = FOLD(x2, k1k2, _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = FOLD(x3, k1k2, _mm_loadu_si128((const __m128i *)(p + 48)));
    }
    __m128i x = FOLD(x0, k3k4, x1);
    x = FOLD(x, k3k4, x2);
    x = FOLD(x, k3k4, x3);
    for (; len >= 16; p += 16, len -= 16)
        x = FOLD(x, k3k4, _mm_loadu_si128((const __m128i *)p));
#undef FOLD
    /* 128 -> 64 bits (appending 32 zero bits), then 64 -> 32 */
    x = _mm_xor_si128(_mm_clmulepi64_si128(x, k3k4, 0x10), _mm_srli_si128(x, 8));
    x = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x, mask32), k5, 0x00), _mm_srli_si128(x, 4));
    __m128i t = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(x, mask32), poly, 0x10), mask32);
    x = _mm_xor_si128(x, _mm_clmulepi64_si128(t, poly, 0x00));
    return (uint32_t)_mm_extract_epi32(x, 1);
}

uint32_t tsim_crc32(uint32_t crc, const unsigned char *buf, size_t len)
{
    static int have = -1;
    if (have < 0)
        have = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    if (have && len >= 64) {
        const size_t n = len & ~(size_t)15;
        crc = ~fold(~crc, buf, n);
        buf += n;
        len -= n;
    }
    return (uint32_t)crc32_z(crc, buf, len);
}
#else
uint32_t tsim_crc32(uint32_t crc, const unsigned char *buf, size_t len)
{
    return (uint32_t)crc32_z(crc, buf, len);
}
#endif
