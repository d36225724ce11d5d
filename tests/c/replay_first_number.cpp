// Four threads print the program's first numbers at once: libstdc++ builds
// cout's fill character and the locale's number cache on first use, inside
// the library, where no hook sees which thread looked first. A thread that
// found them built at record and not yet at replay took the other path
// (30 of 40 recordings diverged) until `rr-lite c++` linked its warm-up,
// which builds them before main.
#include <iostream>
#include <thread>
#include <vector>
int main() {
    std::vector<std::thread> ts;
    for (int i = 0; i < 4; ++i)
        ts.emplace_back([i] { std::cout << i << ' ' << i * 0.5 << std::endl; });
    for (auto& t : ts) t.join();
    return 0;
}
