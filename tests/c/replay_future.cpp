// Promises kept by other threads: the getter waits inside libstdc++ (a
// futex wait that is no event), the setter wakes it from the header code
// in the program (a futex wake that is one). Replay must wake for real:
// returning the recorded count alone left the getter asleep (a thread-pool
// example's replays deadlocked in 4 of 5 recordings).
#include <cstdio>
#include <future>
#include <thread>

int main() {
    long sum = 0;
    for (int round = 0; round < 60; round++) {
        std::promise<int> promise;
        std::future<int> value = promise.get_future();
        std::thread setter([&promise, round] { promise.set_value(round); });
        sum += value.get();
        setter.join();
    }
    std::printf("%ld\n", sum);
    return 0;
}
