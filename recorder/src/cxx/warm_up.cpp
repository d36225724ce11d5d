// Linked by `rr-lite c++` into every C++ program it links (see
// recorder/src/cxx.rs): fills libstdc++'s lazily built locale state while
// the program still has one thread.
//
// libstdc++ builds some state on first use, inside the library, where no
// hook sees it: the standard streams' fill character (`basic_ios::fill`,
// which also fills `ctype<char>`'s widen table), and the number formatting
// cache of a locale (`__use_cache<__numpunct_cache>`, checked for null and
// then built and installed). Threads that make the first `cout << n` at
// the same time each look, and the one that found it built at record could
// find it not yet built at replay: another path, other allocations, a
// divergence (four threads' first `cout << i << endl`: 30 of 40
// recordings). Built here, before main, the same way at record and at
// replay, nobody finds it missing later. A program that makes a new locale
// (`std::locale::global`, `imbue`) builds that one's caches on first use
// again (README, "Limits").
#include <iostream>
#include <locale>
#include <sstream>

namespace {

template <typename Char>
void fill_caches(std::basic_ostream<Char>& out, std::basic_ostream<Char>& err,
                 std::basic_ostream<Char>& log) {
    out.fill();
    err.fill();
    log.fill();
    // The number caches of the global locale, which the streams share.
    std::basic_ostringstream<Char> text;
    text << 1 << ' ' << 1.5 << ' ' << true << ' ' << static_cast<const void*>(&text);
    std::basic_istringstream<Char> numbers(text.str());
    long whole = 0;
    double real = 0;
    numbers >> whole >> real;
    // ctype<char>'s narrow table (`narrow` of a range fills it whole).
    const std::ctype<Char>& ctype = std::use_facet<std::ctype<Char>>(std::locale());
    Char range[2] = {Char('0'), Char('1')};
    char narrowed[2];
    ctype.narrow(range, range + 2, '?', narrowed);
}

struct WarmUp {
    WarmUp() {
        // The standard streams exist from here on, even this early.
        std::ios_base::Init streams;
        fill_caches(std::cout, std::cerr, std::clog);
        fill_caches(std::wcout, std::wcerr, std::wclog);
    }
};

// Before the program's own constructors (the lowest priority open to
// programs), which may start threads.
WarmUp warm_up __attribute__((init_priority(101)));

}  // namespace
