// tbb::atomic on std::atomic: oneTBB (2021+) removed tbb/atomic.h; SILT uses tbb::atomic<T>
// with ++, +=, =, conversion to T and copies of structs holding one.
#ifndef SILT_COMPAT_TBB_ATOMIC_H
#define SILT_COMPAT_TBB_ATOMIC_H
#include <atomic>
namespace tbb {
template <typename T>
class atomic : public std::atomic<T> {
public:
    atomic() noexcept : std::atomic<T>(T()) {}
    atomic(T v) noexcept : std::atomic<T>(v) {}
    atomic(const atomic& o) noexcept : std::atomic<T>(o.load()) {}
    atomic& operator=(const atomic& o) noexcept { this->store(o.load()); return *this; }
    T operator=(T v) noexcept { this->store(v); return v; }
    T fetch_and_add(T d) noexcept { return this->fetch_add(d); }
    T fetch_and_increment() noexcept { return this->fetch_add(1); }
    T fetch_and_decrement() noexcept { return this->fetch_sub(1); }
    T fetch_and_store(T v) noexcept { return this->exchange(v); }
    T compare_and_swap(T value, T comparand) noexcept {
        this->compare_exchange_strong(comparand, value);
        return comparand;
    }
};
}  // namespace tbb
#endif
