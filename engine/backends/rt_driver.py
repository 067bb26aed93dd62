"""The driver version behind a ray-tracing device, for the rt self-check's memory.

slangpy reports a device's adapter but not its driver, and a new driver can change what the rt
detection finds (it builds the acceleration structures and runs the traversal). So the driver is read
here from the system's own libraries, through ctypes, without a new dependency: Vulkan's
``vkGetPhysicalDeviceProperties`` (driverVersion and pipelineCacheUUID, which drivers change with every
build) and CUDA's ``cuDriverGetVersion``. D3D12 and Metal devices are described by their adapter only:
their answer is remembered per adapter and slangpy version.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

#: VkStructureType of VkInstanceCreateInfo.
_VK_INSTANCE_CREATE_INFO = 1
#: Bytes reserved for VkPhysicalDeviceProperties (824 on 64-bit platforms).
_PROPERTIES_BYTES = 4096
#: Offsets in VkPhysicalDeviceProperties: driverVersion, deviceName[256], pipelineCacheUUID[16].
_DRIVER_VERSION, _DEVICE_NAME, _CACHE_UUID = 4, 20, 276


class _InstanceCreateInfo(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int32), ("pNext", ctypes.c_void_p), ("flags", ctypes.c_uint32),
                ("pApplicationInfo", ctypes.c_void_p), ("enabledLayerCount", ctypes.c_uint32),
                ("ppEnabledLayerNames", ctypes.c_void_p), ("enabledExtensionCount", ctypes.c_uint32),
                ("ppEnabledExtensionNames", ctypes.c_void_p)]


def _load(names):
    for name in names:
        if not name:
            continue
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def vulkan_drivers() -> dict[str, str]:
    """{device name: "driver 0x… cache <uuid hex>"} of every Vulkan physical device, or {} when the
    Vulkan loader cannot be loaded or answers with an error."""
    if sys.platform == "win32":
        library = _load(["vulkan-1"])
    elif sys.platform == "darwin":
        library = _load(["libvulkan.1.dylib", "libMoltenVK.dylib"])
    else:
        library = _load(["libvulkan.so.1", ctypes.util.find_library("vulkan")])
    if library is None:
        return {}
    info = _InstanceCreateInfo(sType=_VK_INSTANCE_CREATE_INFO)
    instance = ctypes.c_void_p()
    if library.vkCreateInstance(ctypes.byref(info), None, ctypes.byref(instance)) != 0:
        return {}
    found = {}
    try:
        count = ctypes.c_uint32(0)
        if library.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), None) != 0:
            return {}
        devices = (ctypes.c_void_p * count.value)()
        if library.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), devices) not in (0, 5):  # 5: INCOMPLETE
            return {}
        for device in devices[:count.value]:
            props = ctypes.create_string_buffer(_PROPERTIES_BYTES)
            library.vkGetPhysicalDeviceProperties(ctypes.c_void_p(device), props)
            raw = props.raw
            version = int.from_bytes(raw[_DRIVER_VERSION:_DRIVER_VERSION + 4], "little")
            name = raw[_DEVICE_NAME:_DEVICE_NAME + 256].split(b"\0", 1)[0].decode("utf-8", "replace")
            found[name] = f"driver 0x{version:08x} cache {raw[_CACHE_UUID:_CACHE_UUID + 16].hex()}"
    finally:
        library.vkDestroyInstance(instance, None)
    return found


def cuda_driver() -> str | None:
    """"driver N" from ``cuDriverGetVersion`` (e.g. 12080 for 12.8), or None without a CUDA driver."""
    library = _load(["nvcuda"] if sys.platform == "win32" else ["libcuda.so.1", ctypes.util.find_library("cuda")])
    if library is None:
        return None
    version = ctypes.c_int(0)
    if library.cuDriverGetVersion(ctypes.byref(version)) != 0:
        return None
    return f"driver {version.value}"


def driver_of(kind: str, adapter: str) -> str:
    """The driver of the ``kind`` device called ``adapter``, in words, or "driver not read" where this
    module cannot read it (D3D12, Metal, or a library that did not answer)."""
    text = None
    if kind == "vulkan":
        text = vulkan_drivers().get(adapter)
    elif kind == "cuda":
        text = cuda_driver()
    return text or "driver not read"
