"""Pure transcript normalizers: bytes in, frozen exchanges out. No I/O, no heavy imports."""
