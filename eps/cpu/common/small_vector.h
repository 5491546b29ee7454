// A vector of trivially copyable elements that keeps up to N of them inline: shapes, strides
// and other per-call bookkeeping of kernels, which would otherwise cost an allocation on every
// run (a steady-state run allocates nothing; tests/session/steady_state_allocations.cc). Longer
// contents move to the heap, so any rank works.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

namespace nxrt::cpu {

template <class T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector holds plain values");

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  SmallVector() = default;
  explicit SmallVector(size_t n) { assign(n, T{}); }
  SmallVector(size_t n, T value) { assign(n, value); }
  SmallVector(std::span<const T> values) { assign(values.begin(), values.end()); }
  SmallVector(std::initializer_list<T> values) { assign(values.begin(), values.end()); }
  SmallVector(const std::vector<T>& values) { assign(values.begin(), values.end()); }
  template <std::input_iterator It>
  SmallVector(It first, It last) {
    assign(first, last);
  }
  SmallVector(const SmallVector& other) { assign(other.begin(), other.end()); }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }

  template <std::input_iterator It>
  void assign(It first, It last) {
    const size_t n = static_cast<size_t>(std::distance(first, last));
    Reserve(n);
    std::copy(first, last, data());
    size_ = n;
  }
  void assign(size_t n, T value) {
    Reserve(n);
    std::fill_n(data(), n, value);
    size_ = n;
  }
  void resize(size_t n, T value = T{}) {
    Reserve(n);
    if (n > size_) std::fill(data() + size_, data() + n, value);
    size_ = n;
  }
  void push_back(T value) {
    Reserve(size_ + 1);
    data()[size_++] = value;
  }
  // Appends `n` copies of `value`.
  void append(size_t n, T value) { resize(size_ + n, value); }
  void pop_back() { --size_; }
  void clear() { size_ = 0; }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return heap_ ? heap_.get() : inline_; }
  const T* data() const { return heap_ ? heap_.get() : inline_; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }
  T& front() { return data()[0]; }
  const T& front() const { return data()[0]; }
  operator std::span<const T>() const { return {data(), size_}; }
  std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }
  // For code that keeps a std::vector (an allocation: kernels' per-run paths use SmallVector).
  operator std::vector<T>() const { return to_vector(); }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator<(const SmallVector& a, const SmallVector& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  // Room for `n` elements, keeping the current ones.
  void Reserve(size_t n) {
    if (n <= capacity_) return;
    const size_t grown_capacity = std::max(n, 2 * capacity_);
    auto grown = std::make_unique<T[]>(grown_capacity);
    // The contents never exceed the capacity; saying so keeps GCC's -Warray-bounds from
    // assuming an inline copy of more than N elements.
    if (size_ > capacity_) __builtin_unreachable();
    std::copy(begin(), end(), grown.get());
    heap_ = std::move(grown);
    capacity_ = grown_capacity;
  }

  T inline_[N] = {};
  std::unique_ptr<T[]> heap_;  // null while the contents fit inline
  size_t capacity_ = N;
  size_t size_ = 0;
};

// Shapes, strides and axis lists of kernels: ranks up to 8 cost no allocation.
using Dims = SmallVector<int64_t, 8>;

}  // namespace nxrt::cpu
