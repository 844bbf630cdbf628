// Expected<T>: a value or a one-line message naming what is wrong.
// Parsers and validators return it instead of throwing (C++17 has no std::expected).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace atl {

struct Error {
  std::string message;
};

inline Error make_error(std::string message) { return Error{std::move(message)}; }

template <class T>
class Expected {
 public:
  Expected(T value) : data_(std::move(value)) {}
  Expected(Error error) : data_(std::move(error)) {}

  bool ok() const { return std::holds_alternative<T>(data_); }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const std::string& error() const { return std::get<Error>(data_).message; }

 private:
  std::variant<T, Error> data_;
};

// Status of an operation that yields nothing but may fail.
struct Ok {};
using Status = Expected<Ok>;

}  // namespace atl
