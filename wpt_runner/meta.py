"""META lines of WPT test files.

Generated tests (`.any.js`, `.window.js`, `.worker.js`) declare their settings in
`// META: key=value` comment lines at the top of the file; HTML tests use
`<meta name="timeout">` and `<meta name="variant">` elements. Both are read
into one `Meta` record so discovery treats every kind of test alike.
"""
from __future__ import annotations

import dataclasses
import html.parser
import re

# WPT reads META only from the leading comment block; a stray "// META:" deep
# inside a 100 KB conformance file is data, not configuration.
_META_LINE = re.compile(r"^//\s*META:\s*(?P<key>[A-Za-z_-]+)\s*=\s*(?P<value>.*?)\s*$")


@dataclasses.dataclass
class Meta:
    title: str | None = None
    scripts: list[str] = dataclasses.field(default_factory=list)
    timeout: str = "normal"            # "normal" or "long"
    variants: list[str] = dataclasses.field(default_factory=list)   # "" or "?x" / "#x"
    globals: str | None = None         # raw global= value, None when absent
    unknown: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    def variant_suffixes(self) -> list[str]:
        """Each declared variant is its own test URL; no variant line means one plain URL."""
        return self.variants or [""]


def normalize_variant(value: str) -> str:
    """`?cpu`, `#x` and the empty variant are kept; a bare `cpu` gets its `?`."""
    value = value.strip()
    if value and value[0] not in "?#":
        value = "?" + value
    return value


def parse_js_meta(source: str) -> Meta:
    meta = Meta()
    for line in source.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        match = _META_LINE.match(stripped)
        if not match:
            if stripped.startswith("//"):
                continue  # ordinary comments may sit between META lines
            break
        key, value = match.group("key"), match.group("value")
        if key == "title":
            meta.title = value
        elif key == "script":
            meta.scripts.append(value)
        elif key == "timeout":
            meta.timeout = "long" if value == "long" else "normal"
        elif key == "variant":
            meta.variants.append(normalize_variant(value))
        elif key == "global":
            meta.globals = value
        else:
            meta.unknown.append((key, value))
    return meta


class _HtmlMetaParser(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.meta = Meta()
        self.uses_testharness = False
        self._in_title = False
        self._title: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "meta":
            name, content = attributes.get("name"), attributes.get("content")
            if name == "timeout" and content == "long":
                self.meta.timeout = "long"
            elif name == "variant" and content is not None:
                self.meta.variants.append(normalize_variant(content))
        elif tag == "script":
            src = attributes.get("src") or ""
            if src.endswith("/testharness.js") or src == "testharness.js":
                self.uses_testharness = True
        elif tag == "title":
            self._in_title = True

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self._title.append(data)


def parse_html_meta(source: str) -> tuple[Meta, bool]:
    """The page's timeout and variants, and whether it is a testharness.js test at all."""
    parser = _HtmlMetaParser()
    try:
        parser.feed(source)
        parser.close()
    except Exception:  # a malformed page still runs; it just has no META
        pass
    if parser._title:
        parser.meta.title = "".join(parser._title).strip() or None
    return parser.meta, parser.uses_testharness
