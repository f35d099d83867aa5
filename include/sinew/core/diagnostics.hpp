// sinew/core/diagnostics.hpp: helpers for compile errors that read as sentences.
//
// A primary template that must never be instantiated holds
//   static_assert(sinew::dependent_false<T>, "RingAllReduce has no asynchronous mode; ...");
// so the compiler prints the sentence, not a wall of templates (CUTLASS's collective_mma_decl.hpp trap).
#pragma once

namespace sinew {

/// Always false, but only once T is known: lets a static_assert fire at instantiation, not at definition.
template <class...>
inline constexpr bool dependent_false = false;

/// The value-parameter variant of dependent_false.
template <auto...>
inline constexpr bool dependent_false_v = false;

}  // namespace sinew
