// ringside/format/units.h — numbers with units, as people read them.
//
// Several styles exist on purpose: a table column (fixed decimals), an exact size label
// ("4 KiB" for a bucket edge, never "4.0 KiB"), a viewer axis (significant digits). Each
// function below names its style and shows examples; pick by what the reader needs, and keep a
// place's style when moving code, since reports are compared byte for byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ringside::format {

// printf into a std::string.
std::string printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// "%.*f": fixed(3.14159, 2) == "3.14".
std::string fixed(double value, int digits = 2);

// --- sizes (binary units: KiB = 1024 B) -------------------------------------------------------

// One decimal below 100 units, none above: "512 B", "1.5 KiB", "300 KiB", "3.0 GiB".
std::string bytes(int64_t bytes);
// Exact whole units only, for size-bucket edges and labels: "4 KiB", "1536 B", "1 MiB".
std::string bytesWhole(int64_t bytes);
// Whole units when exact, else one decimal of the largest unit below: "4 KiB", "1.5 KiB".
std::string bytesWholeOrTenths(uint64_t bytes);
// Significant digits (viewer axes and tooltips): bytesSignificant(27168) == "26.5 KiB".
std::string bytesSignificant(double bytes, int digits = 3);

// --- durations --------------------------------------------------------------------------------

// Tables and summaries: "850 ns", "12.3 us", "4.56 ms", "1.23 s", "2m05s", "1h02m"; "-" < 0.
std::string duration(int64_t ns);
// Two decimals of the largest unit up to seconds (messages, findings): "850 ns", "12.35 us".
std::string durationFixed(int64_t ns);
// Significant digits (viewer axes): "0", "850 ns", "12.35 us", "1.5 s".
std::string durationSignificant(double ns, int digits = 4);
// Nanoseconds as microseconds with three decimals, exact ("12.345", "-0.001").
std::string microsFromNanos(int64_t ns);

// --- rates and counts -------------------------------------------------------------------------

// Decimal units, significant digits: "1.25 GB/s", "830 MB/s", "12 B/s".
std::string rate(double bytes_per_second, int digits = 3);
// Thousands separators: "1,234,567".
std::string count(int64_t count);
// Integers joined: join({0, 2, 3}, ",") == "0,2,3".
std::string join(const std::vector<int>& values, std::string_view separator);

// --- reading: the one grammar every verb, file and the viewer accepts (docs/units.md) ---------
//
// A quantity is a non-negative decimal number (digits, an optional fraction, an optional
// exponent: 4096, 1.5, .5, 2e3) followed at once by a unit; no sign, no space, no inf or nan.
// Each function returns false for anything else and, when `error` is given, sets it to one line
// naming the text and the forms expected.

// Sizes, binary as bytes() writes them: none or B = bytes; K, KB, KiB = 1024; M, MB, MiB = 2^20;
// G, GB, GiB = 2^30; T, TB, TiB = 2^40 (letters in any case: 64k, 25mb). A fraction is rounded
// to the nearest byte: 1.5K == 1536. At most INT64_MAX.
bool parseSize(std::string_view text, int64_t* bytes, std::string* error = nullptr);

// The unit a duration takes when it has none (a command line's own convention: --timeout 30 is
// seconds, the viewer's --range 500:900 nanoseconds); kRequired refuses a bare number.
enum class BareDuration { kRequired, kNanoseconds, kSeconds };
// Durations: ns, us, ms, s (as duration() writes them), m and h for minutes and hours:
// 850ns, 12.5us, 10ms, 2.5s, 5m. At most about 292 years (what fits in int64 nanoseconds).
bool parseDuration(std::string_view text, BareDuration bare, double* ns, std::string* error = nullptr);

// Rates, decimal as rate() writes them: an optional prefix k or K (1e3), M (1e6), G (1e9),
// T (1e12), then bytes (B/s, Bps) or bits (b/s, bit/s, bit, bps): 2GB/s, 800MB/s, 100Gb/s,
// 100Gbit, 10Gbps, 12B/s. The letter B or b decides bytes or bits; a unit is required.
bool parseRate(std::string_view text, double* bytes_per_second, std::string* error = nullptr);

}  // namespace ringside::format
