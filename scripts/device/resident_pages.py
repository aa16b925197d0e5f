#!/usr/bin/env python3
"""Which pages of a program's own binary are resident, by ELF section: where the binary's share of RSS goes.

    python3 scripts/device/resident_pages.py dump PID > pages.txt      # on the machine: file offset + present bit
    python3 scripts/device/resident_pages.py sections BINARY pages.txt  # anywhere: resident kB by section

`dump` reads /proc/PID/maps and /proc/PID/pagemap (bit 63: the page is present; needs the same user or root) for
every mapping of the process's executable. `sections` maps each resident page's file offset to the ELF sections
that page holds (a page shared by two sections counts for both) and prints resident kB of each beside its size.
"""
import os
import struct
import sys

PAGE = os.sysconf("SC_PAGE_SIZE")


def dump(pid):
    exe = os.readlink(f"/proc/{pid}/exe")
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for line in maps:
            fields = line.split()
            if len(fields) < 6 or fields[5] != exe:
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            offset = int(fields[2], 16)
            pages = (end - start) // PAGE
            pagemap.seek(start // PAGE * 8)
            entries = struct.unpack(f"{pages}Q", pagemap.read(pages * 8))
            for i, entry in enumerate(entries):
                print(f"{offset + i * PAGE} {fields[1]} {entry >> 63 & 1}")


def elf_sections(path):
    with open(path, "rb") as f:
        data = f.read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]

    def name(at):
        end = data.index(b"\0", names_at + at)
        return data[names_at + at:end].decode()

    # (name, file offset, size) of every section that occupies the file and is loaded (SHF_ALLOC, not NOBITS).
    return [(name(h[0]), h[4], h[5]) for h in headers if h[2] & 2 and h[1] != 8 and h[5]]


def sections(binary, pages_file):
    resident = set()
    with open(pages_file) as f:
        for line in f:
            offset, _, present = line.split()
            if present == "1":
                resident.add(int(offset))
    print(f"{'section':<24} {'size kB':>9} {'resident kB':>12}")
    total = 0
    for name, offset, size in sorted(elf_sections(binary), key=lambda s: s[1]):
        first, last = offset // PAGE * PAGE, (offset + size - 1) // PAGE * PAGE
        count = sum(1 for page in range(first, last + 1, PAGE) if page in resident)
        total += count
        print(f"{name:<24} {size / 1024:>9.0f} {count * PAGE / 1024:>12.0f}")
    print(f"{'all resident pages':<24} {'':>9} {len(resident) * PAGE / 1024:>12.0f}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "dump":
        dump(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "sections":
        sections(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
