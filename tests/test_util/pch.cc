// The object that makes the tests' shared precompiled header
// (tests/CMakeLists.txt): nothing of its own.
