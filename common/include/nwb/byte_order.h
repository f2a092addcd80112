/* SPDX-License-Identifier: MIT */
/* nwb/byte_order.h - unaligned little-endian loads and stores for the wire formats. */
#ifndef NWB_BYTE_ORDER_H
#define NWB_BYTE_ORDER_H

#include <stdint.h>
#include <string.h>

static inline uint16_t nwb_le16_load(const void *p)
{
    const uint8_t *b = (const uint8_t *)p;
    return (uint16_t)(b[0] | (b[1] << 8));
}
static inline uint32_t nwb_le32_load(const void *p)
{
    const uint8_t *b = (const uint8_t *)p;
    return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
}
static inline uint64_t nwb_le64_load(const void *p)
{
    const uint8_t *b = (const uint8_t *)p;
    return (uint64_t)nwb_le32_load(b) | ((uint64_t)nwb_le32_load(b + 4) << 32);
}
static inline void nwb_le16_store(void *p, uint16_t v)
{
    uint8_t *b = (uint8_t *)p;
    b[0] = (uint8_t)v;
    b[1] = (uint8_t)(v >> 8);
}
static inline void nwb_le32_store(void *p, uint32_t v)
{
    uint8_t *b = (uint8_t *)p;
    b[0] = (uint8_t)v;
    b[1] = (uint8_t)(v >> 8);
    b[2] = (uint8_t)(v >> 16);
    b[3] = (uint8_t)(v >> 24);
}
static inline void nwb_le64_store(void *p, uint64_t v)
{
    nwb_le32_store(p, (uint32_t)v);
    nwb_le32_store((uint8_t *)p + 4, (uint32_t)(v >> 32));
}

#endif /* NWB_BYTE_ORDER_H */
