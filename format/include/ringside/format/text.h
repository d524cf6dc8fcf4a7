// ringside/format/text.h — strings from a trace made safe for a terminal, a text file or
// Markdown.
//
// A trace is input like any file: a host name, command line, communicator, label or file name
// in it may hold terminal escape sequences (ESC [ ... that recolour, retitle or clear the
// terminal, or move the cursor over earlier lines), 8-bit C1 controls (0x9B is CSI), a carriage
// return that overwrites a line, bidirectional overrides that reorder what is shown, or HTML
// that a Markdown viewer renders. Every writer of text, Markdown or a terminal line passes such
// strings through one of these before they go out; JSON has jsonString() and HTML its escaping.
//
// What is escaped, and how it is shown (ASCII only, so the escape itself is inert):
//   C0 controls (U+0000..U+001F) and DEL        \xNN          (printableText keeps \n and \t)
//   bytes that are not valid UTF-8               \xNN
//   C1 controls (U+0080..U+009F)                 \u00NN
//   line/paragraph separators U+2028, U+2029,
//   bidi embeddings, overrides and isolates
//   (U+202A..U+202E, U+2066..U+2069)             \uNNNN
// Everything else, printable ASCII and valid UTF-8, is kept as it is; clean text comes back
// unchanged.
#pragma once

#include <string>
#include <string_view>

namespace ringside::format {

// One value shown inside a line (a cell, a name): every control character escaped, \n and \t
// included.
std::string printable(std::string_view text);

// A whole rendered text (a report, a summary): as printable(), but its own \n and \t are kept.
std::string printableText(std::string_view text);

// One value inside a Markdown document: printable(), then '<' and '&' as the entities &lt; and
// &amp;, so no raw HTML tag, comment or entity reaches the renderer. ('>' alone opens nothing
// and is kept: the reports write links as "0->1".)
std::string markdownText(std::string_view text);

}  // namespace ringside::format
