// Must not compile: StreamingLoader streams records from files; a Dataset in memory belongs to CachedLoader.
#include "sinew/data/dataset.hpp"
#include "sinew/data/streaming_loader.hpp"
void make(sinew::data::Dataset d) { sinew::data::StreamingLoader loader(std::move(d)); }
