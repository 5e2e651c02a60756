/*
 * Prepared weights shared between the executors of one model.
 *
 * What an operator derives from its constant inputs at Prepare (GEMM-packed
 * filters, Winograd-transformed filters, a BatchNorm folded into them)
 * depends on those inputs' values and on the form the operator wants, never
 * on the executor that asks. So a model keeps one PreparedCache, and every
 * executor bound from it (MXPredCreateMultiThread's handles, MXPredReshape,
 * Python predictors for other outputs) asks the cache before preparing:
 * N handles of one model hold one prepared copy of the weights, plus their
 * own activations.
 *
 * A key names the constant inputs by identity (the model's parameter
 * arrays, which live as long as the model and its cache) and the form by
 * everything else it depends on (algorithm, geometry, fused attributes),
 * which the operator spells out. Entries are held weakly: a form that no
 * executor uses any more is freed with its last user, so a reshape to a new
 * batch size does not keep the old batch size's form alive.
 *
 * Prepared objects are immutable once made (their Forward is const) and so
 * may be run by several executors at once.
 */
#ifndef MXLITE_OPERATORS_PREPARED_CACHE_H_
#define MXLITE_OPERATORS_PREPARED_CACHE_H_

#include <map>
#include <memory>
#include <string>

#include "../base/config.h"
#include "../base/mutex.h"
#include "../base/status.h"

namespace mxlite {

class PreparedCache {
 public:
  // The object cached under `key`, or the one `make` builds (a callable
  // taking std::shared_ptr<const T>*, returning Status), which is then
  // cached. A key always names objects of one type T: the caller's form
  // string includes what it makes. Concurrent callers with one key wait for
  // the first one's make rather than repeating it.
  template <typename T, typename Make>
  Status FindOrMake(const std::string& key, Make make, std::shared_ptr<const T>* out) {
    MutexLock lock(mutex_);
    auto found = entries_.find(key);
    if (found != entries_.end()) {
      std::shared_ptr<const void> held = found->second.lock();
      if (held) {
        *out = std::static_pointer_cast<const T>(held);
        return Status();
      }
    }
    std::shared_ptr<const T> made;
    MXL_RETURN_IF_ERROR(make(&made));
    entries_[key] = made;
    *out = std::move(made);
    // Forget the entries whose objects are gone, once the map has doubled
    // since the last sweep: amortised constant work per insertion.
    if (entries_.size() >= 2 * swept_size_) {
      for (auto entry = entries_.begin(); entry != entries_.end();) {
        entry = entry->second.expired() ? entries_.erase(entry) : std::next(entry);
      }
      swept_size_ = entries_.size() < 16 ? 16 : entries_.size();
    }
    return Status();
  }

  // Forgets every entry: later lookups prepare afresh (after a parameter
  // was overwritten). Objects already handed out stay with their holders.
  void Clear() {
    MutexLock lock(mutex_);
    entries_.clear();
  }

 private:
  mutable Mutex mutex_;
  std::map<std::string, std::weak_ptr<const void>> entries_;
  size_t swept_size_ = 16;
};

}  // namespace mxlite

#endif  // MXLITE_OPERATORS_PREPARED_CACHE_H_
