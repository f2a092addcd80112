/* SPDX-License-Identifier: MIT */
/*
 * test_viewer_assets.c - the viewer's embedded table (generated at build time from
 * server/viewer/assets.cmake): every asset has bytes, a Content-Type for its extension and a
 * quoted 16-hex-digit ETag, names are unique, the page and uPlot are in it; and the path
 * mapping: "/" is index.html, "/assets/<name>" is <name>, a query is ignored, anything else
 * (a bare prefix, "..", a name with a trailing slash, an unknown name) is no asset.
 */
#define _GNU_SOURCE /* memmem */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <string.h>

#include "viewer_int.h"

static const struct nwb__viewer_asset *find(const char *path)
{
    return nwb__viewer_asset_for_path(path, strlen(path));
}

static int ends_with(const char *s, const char *suffix)
{
    const size_t n = strlen(s), m = strlen(suffix);

    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int count(const struct nwb__viewer_asset *a, const char *needle)
{
    const size_t n = strlen(needle);
    const unsigned char *p = a->data, *end = a->data + a->len;
    int hits = 0;

    while ((p = memmem(p, (size_t)(end - p), needle, n)) != NULL) {
        hits++;
        p += n;
    }
    return hits;
}

static void test_every_asset_is_complete_and_unique(void **state)
{
    (void)state;
    assert_true(nwb__viewer_assets_count >= 5);
    for (size_t i = 0; i < nwb__viewer_assets_count; i++) {
        const struct nwb__viewer_asset *a = &nwb__viewer_assets[i];

        assert_non_null(a->name);
        assert_true(a->len > 0);
        assert_non_null(a->data);
        assert_int_equal(strlen(a->etag), 18);
        assert_int_equal(a->etag[0], '"');
        assert_int_equal(a->etag[17], '"');
        for (int k = 1; k < 17; k++) {
            assert_true(isxdigit((unsigned char)a->etag[k]));
        }
        if (ends_with(a->name, ".js")) {
            assert_string_equal(a->ctype, "text/javascript; charset=utf-8");
        } else if (ends_with(a->name, ".css")) {
            assert_string_equal(a->ctype, "text/css; charset=utf-8");
        } else if (ends_with(a->name, ".html")) {
            assert_string_equal(a->ctype, "text/html; charset=utf-8");
        } else if (ends_with(a->name, ".svg")) {
            assert_string_equal(a->ctype, "image/svg+xml");
        }
        for (size_t j = 0; j < i; j++) {
            assert_string_not_equal(nwb__viewer_assets[j].name, a->name);
        }
    }
}

static void test_page_and_uplot_are_embedded(void **state)
{
    const struct nwb__viewer_asset *index = find("/");
    const struct nwb__viewer_asset *uplot = find("/assets/uPlot.esm.js");

    (void)state;
    assert_non_null(index);
    assert_string_equal(index->name, "index.html");
    assert_memory_equal(index->data, "<!doctype html>", 15);
    /* The page loads only the server's own files, no inline script. */
    assert_non_null(memmem(index->data, index->len, "src=\"/assets/main.js\"", 21));
    assert_int_equal(count(index, "<script"), 1);
    assert_non_null(
        memmem(index->data, index->len, "<script type=\"module\" src=\"/assets/main.js\">", 44));
    assert_null(memmem(index->data, index->len, "<style", 6));
    assert_null(memmem(index->data, index->len, "style=", 6));
    assert_non_null(uplot);
    assert_non_null(memmem(uplot->data, uplot->len, "export { uPlot as default }", 27));
    assert_non_null(find("/assets/uPlot.min.css"));
    assert_non_null(find("/assets/uPlot.LICENSE.txt"));
    assert_non_null(find("/assets/views/crashes.js"));
}

static void test_paths_map_to_assets_or_nothing(void **state)
{
    (void)state;
    assert_ptr_equal(find("/?x=1"), find("/"));
    assert_ptr_equal(find("/assets/main.js?v=2#x"), find("/assets/main.js"));
    assert_ptr_equal(find("/assets/index.html"), find("/"));
    assert_null(find(""));
    assert_null(find("/assets/"));
    assert_null(find("/assets"));
    assert_null(find("/main.js"));
    assert_null(find("/assets/../assets/main.js"));
    assert_null(find("/assets/main.js/"));
    assert_null(find("/assets//main.js"));
    assert_null(find("/assets/MAIN.JS"));
    assert_null(find("/assets/no-such-file.js"));
    assert_null(find("/index.html"));
    /* Only @p len bytes count. */
    assert_ptr_equal(nwb__viewer_asset_for_path("/assets/main.jsXYZ", 15), find("/assets/main.js"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_asset_is_complete_and_unique),
        cmocka_unit_test(test_page_and_uplot_are_embedded),
        cmocka_unit_test(test_paths_map_to_assets_or_nothing),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
