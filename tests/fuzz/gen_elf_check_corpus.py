#!/usr/bin/env python3
# gen_elf_check_corpus.py - writes the seed corpus of fuzz_elf_check (server/src/elf_check.c)
# into corpus/elf_check/: tiny hand-laid ELF files (a build id note in a SHT_NOTE section, with
# and without .debug_info, in a PT_NOTE segment only, extended section numbering) and hostile
# ones (not ELF, a truncated header, a truncated note, a name outside .shstrtab), plus a real
# stripped executable and a real --only-keep-debug file when gcc and objcopy are there.
# Run by hand after changing the checker's rules; test_elf_check.c reads the tiny_* seeds.
import os
import struct
import subprocess
import sys
import tempfile

BUILD_ID = bytes(range(0xa0, 0xb4))  # 20 bytes, like ld's sha1


def note(build_id=BUILD_ID, descsz=None):
    n = struct.pack('<III', 4, len(build_id) if descsz is None else descsz, 3) + b'GNU\0'
    n += build_id
    return n + b'\0' * (-len(n) % 4)


def elf(sections=True, debug=False, segment=False, xnum=False, note_bytes=None, bad_name=False):
    """ehdr | note | shstrtab | [.debug_info] | section headers | [program header]."""
    body = bytearray(64)
    nb = note() if note_bytes is None else note_bytes
    note_off = len(body)
    body += nb
    names = b'\0.note.gnu.build-id\0.shstrtab\0.debug_info\0'
    names_off = len(body)
    body += names
    dbg_off = len(body)
    if debug:
        body += b'\x2a\0\0\0\x05\0\x01\x08' * 4
    body += b'\0' * (-len(body) % 8)
    shdrs = []
    if sections:
        # name, type, flags, addr, offset, size, link, info, align, entsize
        shdrs.append(struct.pack('<IIQQQQIIQQ', 0, 0, 0, 0, 0, (4 if debug else 3) if xnum else 0,
                                 2 if xnum else 0, 0, 0, 0))
        shdrs.append(struct.pack('<IIQQQQIIQQ', 200 if bad_name else 1, 7, 2, 0, note_off,
                                 len(nb), 0, 0, 4, 0))
        shdrs.append(struct.pack('<IIQQQQIIQQ', 20, 3, 0, 0, names_off, len(names), 0, 0, 1, 0))
        if debug:
            shdrs.append(struct.pack('<IIQQQQIIQQ', 30, 1, 0, 0, dbg_off, 32, 0, 0, 1, 0))
    shoff = len(body) if shdrs else 0
    for s in shdrs:
        body += s
    phoff = 0
    if segment:
        phoff = len(body)
        body += struct.pack('<IIQQQQQQ', 4, 4, note_off, 0, 0, len(nb), len(nb), 4)
    shnum = 0 if xnum else len(shdrs)
    shstrndx = 0xffff if xnum else (2 if shdrs else 0)
    ident = b'\x7fELF' + bytes([2, 1, 1, 0]) + b'\0' * 8
    body[0:64] = ident + struct.pack('<HHIQQQIHHHHHH', 1, 62, 1, 0, phoff, shoff, 0, 64,
                                     56 if segment else 0, 1 if segment else 0,
                                     64 if shdrs else 0, shnum, shstrndx)
    return bytes(body)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                             'corpus', 'elf_check')
    os.makedirs(out, exist_ok=True)
    seeds = {
        'tiny_note_section.elf': elf(),
        'tiny_debug_info.elf': elf(debug=True),
        'tiny_pt_note.elf': elf(sections=False, segment=True),
        'tiny_xnum.elf': elf(xnum=True),
        'bad_not_elf.txt': b'this is not an ELF file\n',
        'bad_truncated_header.elf': elf()[:40],
        'bad_truncated_note.elf': elf(note_bytes=note(descsz=0x1000)),
        'bad_name_outside.elf': elf(bad_name=True),
        'bad_no_build_id.elf': elf(note_bytes=struct.pack('<III', 4, 4, 1) + b'GNU\0' + b'abcd'),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, 't.c')
        with open(src, 'w') as f:
            f.write('int main(void) { return 0; }\n')
        try:
            subprocess.run(['gcc', '-Os', '-s', '-o', os.path.join(out, 'real_stripped_exe'),
                            src], check=True)
            subprocess.run(['gcc', '-Os', '-g', '-o', os.path.join(tmp, 'dbg'), src], check=True)
            subprocess.run(['objcopy', '--only-keep-debug', os.path.join(tmp, 'dbg'),
                            os.path.join(out, 'real_only_keep_debug.debug')], check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            print('gen_elf_check_corpus: real seeds skipped: %s' % e, file=sys.stderr)


main()
