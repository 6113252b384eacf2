/*
 * ISA-L's CRC32C with the vector state cleared on return, compiled at load time by bun:ffi's cc
 * (TinyCC) from ffi/crc32c.ts. Owns nothing else.
 *
 * Why: ISA-L's crc32_iscsi takes an AVX-512 path for buffers of a few hundred bytes and up and
 * returns without VZEROUPPER. Until something executes it, the SSE code that follows (Bun's JIT,
 * glibc's copies) runs about 5x slower on this machine's Xeon: adding a record to a batch took
 * 33 ns in a fresh process, 157 ns after one CRC of an 11 KB buffer, 31 ns again after one
 * VZEROUPPER (bench/record.bench.ts, docs/benchmarks.md).
 *
 * Invariants: loaded only on CPUs that report AVX (VZEROUPPER is an AVX instruction: elsewhere it
 * would be SIGILL, and ISA-L takes no AVX path there anyway). TinyCC's assembler has no AVX
 * mnemonics, hence the bytes (c5 f8 77 = VZEROUPPER). crc32_iscsi is found with dlsym rather than
 * linked, because only libisal.so.2 (no development symlink) is installed.
 */
extern void *dlopen(const char *file, int mode);
extern void *dlsym(void *handle, const char *name);

typedef unsigned int (*crc32_iscsi_fn)(const unsigned char *buffer, int length, unsigned int init);

static crc32_iscsi_fn crc32_iscsi;

/* 1 when libisal.so.2 and its crc32_iscsi were found. */
int booblik_crc32c_load(void) {
  void *library = dlopen("libisal.so.2", 2 /* RTLD_NOW */);
  if (library == 0) return 0;
  crc32_iscsi = (crc32_iscsi_fn)dlsym(library, "crc32_iscsi");
  return crc32_iscsi != 0;
}

/* The standard CRC32C (initial value and final xor 0xFFFFFFFF) of buffer[0, length). */
unsigned int booblik_crc32c(const unsigned char *buffer, int length) {
  unsigned int crc = crc32_iscsi(buffer, length, 0xffffffffu);
  __asm__ volatile(".byte 0xc5,0xf8,0x77"); /* VZEROUPPER */
  return ~crc;
}
