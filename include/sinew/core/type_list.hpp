// sinew/core/type_list.hpp: the few type-list operations sinew needs.
#pragma once

#include <cstddef>
#include <tuple>

namespace sinew {

template <class... T>
/// A list of types, for computing over layer and node lists at compile time.
struct type_list {
  /// the number of types
  static constexpr std::size_t kSize = sizeof...(T);
};

namespace detail {
template <class T, class List>
struct prepend;
template <class T, class... Ts>
struct prepend<T, type_list<Ts...>> {
  using type = type_list<T, Ts...>;
};
template <class List>
struct last;
template <class T>
struct last<type_list<T>> {
  using type = T;
};
template <class T, class U, class... Ts>
struct last<type_list<T, U, Ts...>> : last<type_list<U, Ts...>> {};
template <template <class> class F, class List>
struct map;
template <template <class> class F, class... Ts>
struct map<F, type_list<Ts...>> {
  using type = type_list<F<Ts>...>;
};
template <class List>
struct as_tuple;
template <class... Ts>
struct as_tuple<type_list<Ts...>> {
  using type = std::tuple<Ts...>;
};
}  // namespace detail

template <class T, class List>
using prepend_t = typename detail::prepend<T, List>::type;
template <class List>
using last_t = typename detail::last<List>::type;
template <template <class> class F, class List>
using map_t = typename detail::map<F, List>::type;
template <class List>
using as_tuple_t = typename detail::as_tuple<List>::type;

}  // namespace sinew
