// std::random_device seeding a generator, the usual C++ way, in the main
// thread and in two others: with the default token libstdc++ reads the
// RDRAND/RDSEED instructions where the CPU has them, which no hook sees,
// so a replay printed other numbers (and exited 0). The other tokens read
// /dev/urandom or getentropy.
#include <cstdio>
#include <random>
#include <string>
#include <thread>

static unsigned draw(const char *token) {
    std::random_device device{std::string(token)};
    std::mt19937 generator(device());
    return generator() ^ device();
}

int main() {
    unsigned from[2] = {0, 0};
    std::thread a([&] { from[0] = draw("default"); });
    std::thread b([&] { from[1] = draw("/dev/urandom"); });
    a.join();
    b.join();
    std::printf("%u %u %u\n", draw("default"), from[0], from[1]);
    return 0;
}
