#include "base/shared_arena.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace distflow {
namespace {

SharedArena* Arena() {
  EXPECT_TRUE(SharedArena::Enable().ok());
  return SharedArena::Get();
}

// A block of `bytes` filled with `value`: its index, and where Locate finds
// its first byte (index -1 when either fails).
struct Filled {
  int64_t index = -1;
  uint32_t block = 0;
  uint64_t offset = 0;
};
Filled AllocateFilled(SharedArena* arena, size_t bytes, char value) {
  Filled f;
  f.index = arena->Allocate(bytes);
  if (f.index < 0) return f;
  std::memset(arena->data(f.index), value, bytes);
  if (!arena->Locate(arena->data(f.index), bytes, &f.block, &f.offset)) {
    f.index = -1;
  }
  return f;
}

TEST(SharedArenaTest, BlocksOfOneSizeAreReusedOnceFreed) {
  SharedArena* arena = Arena();
  ASSERT_NE(arena, nullptr);
  const int64_t a = arena->Allocate(940'800);
  ASSERT_GE(a, 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena->data(a)) % 4096, 0u);
  std::memset(arena->data(a), 7, 940'800);  // the whole size is writable
  const int64_t b = arena->Allocate(940'800);
  ASSERT_GE(b, 0);
  EXPECT_NE(a, b);
  arena->Free(a);
  // A tensor of about the same size takes the freed block.
  EXPECT_EQ(arena->Allocate(930'000), a);
  arena->Free(a);
  arena->Free(b);
}

// Idle blocks beyond kSharedArenaMaxIdleBytes give their memory back (their
// pages read as zeros when the block is taken again).
TEST(SharedArenaTest, BlocksIdleBeyondTheLimitGiveTheirMemoryBack) {
  SharedArena* arena = Arena();
  ASSERT_NE(arena, nullptr);
  constexpr size_t kBlock = kMaxSharedBlockBytes;
  const int count = static_cast<int>(kSharedArenaMaxIdleBytes / kBlock) + 2;
  std::vector<int64_t> blocks;
  for (int i = 0; i < count; ++i) {
    blocks.push_back(arena->Allocate(kBlock));
    ASSERT_GE(blocks.back(), 0);
    arena->data(blocks.back())[0] = 1;  // one page of each
  }
  for (int64_t b : blocks) arena->Free(b);
  int kept = 0, released = 0;
  for (int i = 0; i < count; ++i) {
    const int64_t b = arena->Allocate(kBlock);
    ASSERT_GE(b, 0);
    (arena->data(b)[0] == 1 ? kept : released) += 1;
    blocks[i] = b;
  }
  // (Blocks other tests left idle in this process count toward the limit.)
  EXPECT_GE(kept, static_cast<int>(kSharedArenaMaxIdleBytes / kBlock) - 1);
  EXPECT_GE(released, 2);
  for (int64_t b : blocks) arena->Free(b);
}

TEST(SharedArenaTest, BuffersOverTheLimitAreLeftToTheHeap) {
  SharedArena* arena = Arena();
  ASSERT_NE(arena, nullptr);
  EXPECT_EQ(arena->Allocate(kMaxSharedBlockBytes + 1), -1);
  const int64_t largest = arena->Allocate(kMaxSharedBlockBytes);
  EXPECT_GE(largest, 0);
  if (largest >= 0) arena->Free(largest);
}

TEST(SharedArenaTest, LocateFindsTheBlockOfBytesInside) {
  SharedArena* arena = Arena();
  ASSERT_NE(arena, nullptr);
  const int64_t a = arena->Allocate(1 << 20);
  ASSERT_GE(a, 0);
  uint32_t block = 0;
  uint64_t offset = 0;
  ASSERT_TRUE(arena->Locate(arena->data(a) + 100, 1000, &block, &offset));
  EXPECT_EQ(block, static_cast<uint32_t>(a));
  uint32_t block0 = 0;
  uint64_t offset0 = 0;
  ASSERT_TRUE(arena->Locate(arena->data(a), 1, &block0, &offset0));
  EXPECT_EQ(offset, offset0 + 100);
  // Past the block's end, and memory outside the arena: not found.
  EXPECT_FALSE(arena->Locate(arena->data(a) + 100, 1 << 20, &block, &offset));
  int local = 0;
  EXPECT_FALSE(arena->Locate(&local, sizeof(local), &block, &offset));
  arena->Free(a);
}

TEST(SharedArenaTest, AReaderSeesTheBytesAndHoldsTheBlock) {
  SharedArena* arena = Arena();
  ASSERT_NE(arena, nullptr);
  const auto [a, block, offset] = AllocateFilled(arena, 256 << 10, 42);
  ASSERT_GE(a, 0);

  // This process maps its own arena as another would.
  auto attached = AttachedArena::Attach(getpid(), arena->fd(), arena->token());
  ASSERT_TRUE(attached.ok()) << attached.status();
  auto bytes = (*attached)->Hold(block, offset + 10, 1000);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ((*bytes)[0], 42);
  EXPECT_NE(*bytes, arena->data(a) + 10);  // another mapping of the memory
  EXPECT_TRUE(arena->ReadElsewhere(block));

  // Freed while read elsewhere: not reused until the reader lets go.
  const size_t idle = arena->idle_blocks();
  arena->Free(block);
  EXPECT_EQ(arena->idle_blocks(), idle);
  const int64_t other = arena->Allocate(256 << 10);
  EXPECT_NE(other, a);
  (*attached)->Release(block);
  EXPECT_FALSE(arena->ReadElsewhere(block));
  EXPECT_EQ(arena->Allocate(256 << 10), a);
  arena->Free(a);
  arena->Free(other);
  EXPECT_FALSE((*attached)->OwnerGone());
}

TEST(SharedArenaTest, BytesOutsideTheBlockAreRefused) {
  SharedArena* arena = Arena();
  ASSERT_NE(arena, nullptr);
  const auto [a, block, offset] = AllocateFilled(arena, 64 << 10, 0);
  ASSERT_GE(a, 0);
  auto attached = AttachedArena::Attach(getpid(), arena->fd(), arena->token());
  ASSERT_TRUE(attached.ok()) << attached.status();
  auto beyond = (*attached)->Hold(block, offset, 1 << 20);
  EXPECT_EQ(beyond.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(beyond.status().message().find("block"), std::string::npos);
  EXPECT_EQ((*attached)->Hold(kSharedArenaMaxBlocks, 0, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(arena->ReadElsewhere(block));  // refused holds count nothing
  arena->Free(a);
}

TEST(SharedArenaTest, AnotherDescriptorOrTokenIsNotTakenForTheArena) {
  SharedArena* arena = Arena();
  ASSERT_NE(arena, nullptr);
  auto wrong = AttachedArena::Attach(getpid(), arena->fd(), arena->token() + 1);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(wrong.status().message().find("not the tensor arena"),
            std::string::npos);
  auto stdin_fd = AttachedArena::Attach(getpid(), 0, arena->token());
  EXPECT_EQ(stdin_fd.status().code(), absl::StatusCode::kFailedPrecondition);
}

// A child process maps the parent's arena, reads a block the parent wrote,
// and holds it until told to let go; the parent sees the hold. The
// parent's arena is not the forked child's, which may make its own.
TEST(SharedArenaTest, AChildProcessReadsAndHoldsTheParentsBlock) {
  SharedArena* arena = Arena();
  ASSERT_NE(arena, nullptr);
  const auto [a, block, offset] = AllocateFilled(arena, 128 << 10, 9);
  ASSERT_GE(a, 0);
  const pid_t parent = getpid();
  int held[2], go[2];
  ASSERT_EQ(pipe(held), 0);
  ASSERT_EQ(pipe(go), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The parent's arena is not the child's: it cuts no block of it.
    if (SharedArena::Get() != nullptr || arena->Allocate(1 << 20) != -1) {
      _exit(2);
    }
    // An inherited buffer let go: the parent's block, not freed here.
    const size_t idle = arena->idle_blocks();
    arena->Free(block);
    if (arena->idle_blocks() != idle) _exit(7);
    auto attached = AttachedArena::Attach(parent, arena->fd(), arena->token());
    if (!attached.ok()) _exit(3);
    auto bytes = (*attached)->Hold(block, offset, 128 << 10);
    if (!bytes.ok() || (*bytes)[128 * 1024 - 1] != 9) _exit(4);
    char c = 1;
    if (write(held[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(5);
    (*attached)->Release(block);
    // A child may make an arena of its own.
    if (!SharedArena::Enable().ok() || SharedArena::Get() == nullptr ||
        SharedArena::Get() == arena) {
      _exit(6);
    }
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(held[0], &c, 1), 1);
  EXPECT_TRUE(arena->ReadElsewhere(block));
  ASSERT_EQ(write(go[1], &c, 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(arena->ReadElsewhere(block));
  EXPECT_EQ(SharedArena::Get(), arena);
  EXPECT_EQ(arena->data(a)[0], 9);
  arena->Free(a);
  for (int fd : {held[0], held[1], go[0], go[1]}) close(fd);
}

// A reader killed while it holds a block: once its process is gone, the
// owner clears its mark, and the block is reused again.
TEST(SharedArenaTest, WhatAKilledReaderHeldIsReclaimed) {
  SharedArena* arena = Arena();
  ASSERT_NE(arena, nullptr);
  const auto [a, block, offset] = AllocateFilled(arena, 128 << 10, 5);
  ASSERT_GE(a, 0);
  const pid_t parent = getpid();
  int held[2];
  ASSERT_EQ(pipe(held), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto attached = AttachedArena::Attach(parent, arena->fd(), arena->token());
    if (!attached.ok() || !(*attached)->Hold(block, offset, 1).ok()) _exit(3);
    char c = 1;
    if (write(held[1], &c, 1) != 1) _exit(4);
    pause();  // until killed, holding the block
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(held[0], &c, 1), 1);
  EXPECT_TRUE(arena->ReadElsewhere(block));
  arena->ReclaimDeadReaders();  // the reader lives: nothing changes
  EXPECT_TRUE(arena->ReadElsewhere(block));
  const size_t idle = arena->idle_blocks();
  arena->Free(block);
  EXPECT_EQ(arena->idle_blocks(), idle);  // held: not reusable yet

  kill(child, SIGKILL);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  arena->ReclaimDeadReaders();
  EXPECT_FALSE(arena->ReadElsewhere(block));
  EXPECT_EQ(arena->idle_blocks(), idle + 1);
  EXPECT_EQ(arena->Allocate(128 << 10), a);
  arena->Free(a);
  for (int fd : {held[0], held[1]}) close(fd);
}

// A reader takes a slot while it has the arena mapped, and gives it back
// when it lets go of the mapping.
TEST(SharedArenaTest, ReadersGiveTheirSlotsBack) {
  SharedArena* arena = Arena();
  ASSERT_NE(arena, nullptr);
  for (int i = 0; i < 2 * kSharedArenaMaxReaders; ++i) {
    auto attached =
        AttachedArena::Attach(getpid(), arena->fd(), arena->token());
    ASSERT_TRUE(attached.ok()) << "attach " << i << ": " << attached.status();
  }
  std::vector<std::shared_ptr<AttachedArena>> all;
  for (;;) {
    auto attached =
        AttachedArena::Attach(getpid(), arena->fd(), arena->token());
    if (!attached.ok()) {
      EXPECT_NE(attached.status().message().find("reader slots"),
                std::string::npos)
          << attached.status();
      break;
    }
    all.push_back(*attached);
    ASSERT_LE(all.size(), static_cast<size_t>(kSharedArenaMaxReaders));
  }
  EXPECT_GE(all.size(), static_cast<size_t>(kSharedArenaMaxReaders) - 2);
}

}  // namespace
}  // namespace distflow
