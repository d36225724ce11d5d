// Four threads make their stream's first std::endl at once: libstdc++
// fills ctype<char>'s widen table on first use, inside the library, and the
// header code in the program reads its flag and then the table or the
// call. A thread that found the table filled at record, and not yet at
// replay, took the other path (one recording in four to ten diverged).
// (`rr-lite c++`'s warm-up fills the table of the locale the program starts
// with; a facet made later is filled on first use, as here.)
#include <iostream>
#include <locale>
#include <thread>
#include <vector>
int main() {
    std::cout.imbue(std::locale(std::locale(), new std::ctype<char>));
    std::vector<std::thread> ts;
    for (int i = 0; i < 4; ++i)
        ts.emplace_back([] { std::cout << "hello" << std::endl; });
    for (auto& t : ts) t.join();
    return 0;
}
