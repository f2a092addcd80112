/* SPDX-License-Identifier: MIT */
/* test_name.c - FNV-1a name hashes (published test vectors) and the token form. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "nwb/name.h"

static void test_name_hash_matches_fnv1a_64_vectors(void **state)
{
    (void)state;
    assert_true(nwb_name_hash("", 0) == 0xcbf29ce484222325ull);
    assert_true(nwb_name_hash("a", 1) == 0xaf63dc4c8601ec8cull);
    assert_true(nwb_name_hash("foobar", 6) == 0x85944171f73967e8ull);
    assert_true(nwb_name_make("foobar") == 0x85944171f73967e8ull);
}

static void test_name_token_is_hash_sign_and_16_lowercase_hex(void **state)
{
    char tok[NWB_NAME_TOKEN_SIZE];

    (void)state;
    nwb_name_token(0x85944171f73967e8ull, tok);
    assert_string_equal(tok, "#85944171f73967e8");
    nwb_name_token(0, tok);
    assert_string_equal(tok, "#0000000000000000");
}

static void test_name_str_gives_string_only_when_registered(void **state)
{
    char buf[NWB_NAME_TOKEN_SIZE];
    const nwb_name_t n = nwb_name_make("render/shadow_pass");
    const char *s = nwb_name_str(n, buf);

    (void)state;
    if (nwb_name_registry_enabled()) {
        assert_string_equal(s, "render/shadow_pass");
        assert_true(nwb_name_registry_count() >= 1);
    } else {
        assert_ptr_equal(s, buf);
        assert_int_equal(strlen(s), 17);
        assert_int_equal(s[0], '#');
        assert_int_equal(nwb_name_registry_count(), 0);
    }
    /* A name never made is always a token. */
    assert_ptr_equal(nwb_name_str(0x1234ull, buf), buf);
    assert_string_equal(buf, "#0000000000001234");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_hash_matches_fnv1a_64_vectors),
        cmocka_unit_test(test_name_token_is_hash_sign_and_16_lowercase_hex),
        cmocka_unit_test(test_name_str_gives_string_only_when_registered),
    };

    return cmocka_run_group_tests_name("common.name", tests, NULL, NULL);
}
