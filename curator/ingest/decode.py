"""Text decoding: UTF-8 first, then a detected encoding, lossy only as a last resort."""

from __future__ import annotations

from dataclasses import dataclass

LOSSY = "utf-8-lossy"


def _plausible_latin(text: str) -> bool:
    """Real Latin-script text has few non-ASCII letters; mojibake of another script has many."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return True
    foreign = sum(1 for c in letters if ord(c) > 127)
    return foreign / len(letters) < 0.3


@dataclass
class FallbackDecoder:
    """Decodes the lines of one file that are not valid UTF-8.

    The encoding is chosen once per file, from all of its non-UTF-8 bytes: cp1252
    when it decodes them (but for a few stray bytes it leaves undefined) and the
    result reads as Latin-script text (the common case of web text), otherwise
    charset-normalizer's best guess. A line that the chosen encoding cannot decode
    is decoded as UTF-8 with replacement characters and counted as lossy.
    """

    sample: bytes
    _encoding: str | None = None
    _chosen: bool = False

    @property
    def encoding(self) -> str | None:
        if not self._chosen:
            self._encoding = self._choose()
            self._chosen = True
        return self._encoding

    def _choose(self) -> str | None:
        # The five bytes cp1252 leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) turn up as
        # strays in real Windows text; a few of them must not send the whole file to
        # another guess (mojibake in every line). Lines holding one are decoded lossily.
        text = self.sample.decode("cp1252", errors="replace")
        undefined = text.count("\ufffd")
        high = len(self.sample.translate(None, bytes(range(128))))  # non-ASCII bytes
        if undefined <= max(1, high // 10) and _plausible_latin(text.replace("\ufffd", "")):
            return "cp1252"
        from charset_normalizer import from_bytes

        best = from_bytes(self.sample).best()
        if best is None or best.encoding in ("utf_8", "utf-8", "ascii"):
            return None
        return best.encoding

    def decode(self, raw: bytes) -> tuple[str, str]:
        """Return (text, encoding used); the encoding is ``utf-8-lossy`` for a lossy decode."""
        enc = self.encoding
        if enc is not None:
            try:
                return raw.decode(enc), enc.replace("_", "-")
            except UnicodeDecodeError:
                pass
        return raw.decode("utf-8", errors="replace"), LOSSY
