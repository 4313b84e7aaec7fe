// A shared library that is not a device library: it lacks the entry point.
extern "C" int not_a_device_library() { return 0; }
