// Threads dropping their references to one exception at once: copies of a
// std::exception_ptr, and main's catch of the exception rethrown from one.
// libstdc++ counts the references in the exception's header, where no hook
// sees it, and whichever thread drops the last reference destroys the
// exception: at replay another thread did, and the replay diverged (a
// reduction of taskflow's exception example: every recording).
#include <atomic>
#include <cstdio>
#include <exception>
#include <thread>

thread_local int me = 0;
int destroyed_by[3];

struct Failure : std::exception {
    ~Failure() override { destroyed_by[me]++; }
};

// Both threads wait for each other, then drop their reference.
static void meet(std::atomic<int>& go) {
    go++;
    while (go.load() < 2) {
    }
}

int main() {
    for (int i = 0; i < 50; ++i) {
        std::exception_ptr a = std::make_exception_ptr(Failure());
        std::exception_ptr b = a;
        std::atomic<int> go{0};
        std::thread t1([&] { me = 1; meet(go); a = nullptr; });
        std::thread t2([&] { me = 2; meet(go); b = nullptr; });
        t1.join();
        t2.join();
    }
    int caught = 0;
    for (int i = 0; i < 50; ++i) {
        std::exception_ptr a = std::make_exception_ptr(Failure());
        std::exception_ptr b = a;
        std::atomic<int> go{0};
        std::thread t([&] { me = 1; meet(go); b = nullptr; });
        meet(go);
        try {
            std::rethrow_exception(a);
        } catch (const Failure&) {
            a = nullptr;
            caught++;
        }
        t.join();
    }
    std::printf("caught %d; destroyed by thread 1: %d, by thread 2: %d, by main: %d\n", caught,
                destroyed_by[1], destroyed_by[2], destroyed_by[0]);
    return 0;
}
