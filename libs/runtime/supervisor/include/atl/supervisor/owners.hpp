// Owners: which driver connection made each placement group and task, so
// that what a driver made ends with it, as Ray's: a job's placement groups
// and actors go when its driver dies, unless they were made detached. A
// driver's Python removes its own at a clean exit; a driver SIGKILLed (or
// lost with its machine) cannot, and its groups, its actors' reservations
// and its warm processes would hold the pods' CPUs for ever, and every
// later call waiting for them would wait for ever. Plain ids, no clock.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace atl::supervisor {

// A driver connection (a process's libatl client), numbered by the shell,
// which maps it to the connection's actor and watches it.
struct OwnerId {
  std::int64_t value = 0;
  friend bool operator==(OwnerId a, OwnerId b) { return a.value == b.value; }
  friend bool operator<(OwnerId a, OwnerId b) { return a.value < b.value; }
};

class Owners {
 public:
  using GroupId = std::int64_t;
  using TaskNumber = std::int32_t;

  // What an owner left when it went: ended by the caller, in this order.
  struct Left {
    std::vector<GroupId> groups;
    std::vector<TaskNumber> tasks;
  };

  void own_group(OwnerId owner, GroupId group) {
    groups_[group] = owner;
    by_owner_[owner].groups.insert(group);
  }
  void own_task(OwnerId owner, TaskNumber task) {
    tasks_[task] = owner;
    by_owner_[owner].tasks.insert(task);
  }
  // Made detached (lifetime="detached", a detached actor's process): it
  // outlives its maker. False when no owner holds it (unknown, or ended).
  bool disown_group(GroupId group) { return drop(groups_, group, &Mine::groups); }
  bool disown_task(TaskNumber task) { return drop(tasks_, task, &Mine::tasks); }
  // Removed or ended on its own: nothing to end later.
  void forget_group(GroupId group) { drop(groups_, group, &Mine::groups); }
  void forget_task(TaskNumber task) { drop(tasks_, task, &Mine::tasks); }
  // Who made `group` or `task` (none: detached, ended, or never owned).
  const OwnerId* owner_of_group(GroupId group) const { return find(groups_, group); }
  const OwnerId* owner_of_task(TaskNumber task) const { return find(tasks_, task); }

  // `owner` is gone: what it still owned, forgotten here.
  Left gone(OwnerId owner) {
    Left left;
    auto it = by_owner_.find(owner);
    if (it == by_owner_.end()) return left;
    for (GroupId g : it->second.groups) {
      left.groups.push_back(g);
      groups_.erase(g);
    }
    for (TaskNumber t : it->second.tasks) {
      left.tasks.push_back(t);
      tasks_.erase(t);
    }
    by_owner_.erase(it);
    return left;
  }

  std::size_t owners() const { return by_owner_.size(); }
  std::size_t owned() const { return groups_.size() + tasks_.size(); }

 private:
  struct Mine {
    std::set<GroupId> groups;
    std::set<TaskNumber> tasks;
  };

  template <class Id>
  static const OwnerId* find(const std::map<Id, OwnerId>& map, Id id) {
    auto it = map.find(id);
    return it == map.end() ? nullptr : &it->second;
  }
  template <class Id>
  bool drop(std::map<Id, OwnerId>& map, Id id, std::set<Id> Mine::*set) {
    auto it = map.find(id);
    if (it == map.end()) return false;
    auto mine = by_owner_.find(it->second);
    if (mine != by_owner_.end()) {
      (mine->second.*set).erase(id);
      if (mine->second.groups.empty() && mine->second.tasks.empty()) by_owner_.erase(mine);
    }
    map.erase(it);
    return true;
  }

  std::map<GroupId, OwnerId> groups_;
  std::map<TaskNumber, OwnerId> tasks_;
  std::map<OwnerId, Mine> by_owner_;
};

}  // namespace atl::supervisor
