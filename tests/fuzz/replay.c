/* SPDX-License-Identifier: MIT */
/*
 * A libFuzzer harness's inputs run without libFuzzer: the test suite's short
 * fuzz pass, with whatever compiler builds the project (under ASan and UBSan
 * when the build can link them). Each file given, and each file in each
 * directory given, is one input; with --mutate, every prefix of each input
 * and a few byte substitutions at each of its first positions run as well,
 * a cheap deterministic stand-in for the mutations libFuzzer would try.
 *
 * Usage: replay [--mutate] FILE|DIR...
 * Exit: 0 when every input ran (a broken promise aborts in the harness),
 * 1 when an input cannot be read or a directory holds none.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Substitutions are tried at the first MUTATE_SPAN positions, which cover
 * the .npy preamble and header of every corpus input. */
#define MUTATE_SPAN 256

static size_t runs;

/* Runs one input from a buffer of exactly its size, so ASan sees overreads. */
static void run(const unsigned char *data, size_t size)
{
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy) {
        fprintf(stderr, "replay: out of memory\n");
        exit(1);
    }
    memcpy(copy, data, size);
    LLVMFuzzerTestOneInput(copy, size);
    free(copy);
    runs++;
}

static void run_mutations(unsigned char *data, size_t size)
{
    static const unsigned char subst[] = { 0x00, 0xff, ' ', '9', ',' };
    for (size_t n = 0; n < size; n++)
        run(data, n);
    for (size_t i = 0; i < size && i < MUTATE_SPAN; i++) {
        unsigned char orig = data[i];
        for (size_t k = 0; k < sizeof subst; k++) {
            if (subst[k] == orig)
                continue;
            data[i] = subst[k];
            run(data, size);
        }
        data[i] = orig;
    }
}

/* The whole of `path` into a malloc'd buffer; NULL when it cannot be read. */
static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *data = NULL;
    size_t cap = 0;
    int bad = 0;
    *size = 0;
    while (!bad) {
        if (*size == cap) {
            unsigned char *p = realloc(data, cap ? 2 * cap : 4096);
            bad = !p;
            if (!p)
                break;
            data = p;
            cap = cap ? 2 * cap : 4096;
        }
        size_t got = fread(data + *size, 1, cap - *size, f);
        *size += got;
        if (got == 0)
            break;
    }
    bad |= ferror(f);
    fclose(f);
    if (bad) {
        free(data);
        return NULL;
    }
    return data;
}

static int run_file(const char *path, int mutate)
{
    size_t size;
    unsigned char *data = slurp(path, &size);
    if (!data) {
        fprintf(stderr, "replay: %s: cannot read\n", path);
        return -1;
    }
    run(data, size);
    if (mutate)
        run_mutations(data, size);
    free(data);
    return 0;
}

/* The regular files in `dir`, in name order so runs are reproducible;
 * names starting with '.' are skipped. */
static int run_dir(const char *dir, int mutate)
{
    struct dirent **entries;
    int n = scandir(dir, &entries, NULL, alphasort);
    if (n < 0) {
        perror(dir);
        return -1;
    }
    int rc = 0;
    size_t files = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, entries[i]->d_name);
        if (rc == 0 && entries[i]->d_name[0] != '.' && stat(path, &st) == 0 &&
            S_ISREG(st.st_mode)) {
            rc = run_file(path, mutate);
            files++;
        }
        free(entries[i]);
    }
    free(entries);
    if (rc == 0 && files == 0) {
        fprintf(stderr, "replay: %s: no inputs\n", dir);
        rc = -1;
    }
    return rc;
}

int main(int argc, char **argv)
{
    int mutate = argc > 1 && !strcmp(argv[1], "--mutate");
    if (argc < 2 + mutate) {
        fprintf(stderr, "usage: replay [--mutate] FILE|DIR...\n");
        return 1;
    }
    for (int i = 1 + mutate; i < argc; i++) {
        struct stat st;
        int rc = stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) ? run_dir(argv[i], mutate)
                                                                 : run_file(argv[i], mutate);
        if (rc)
            return 1;
    }
    printf("replay: %zu runs, no broken promise\n", runs);
    return 0;
}
