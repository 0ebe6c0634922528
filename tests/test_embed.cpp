// vksoftmax inside a host application: this test is the host. It links the
// Vulkan loader directly (no volk) and libvksoftmax.so through vksoftmax.h
// only, creates its own instance with the validation layer and
// synchronization validation, its own device, buffers and command buffers,
// records work before and after the softmax, and fails on any validation
// message. Every test runs twice: on a device with VK_KHR_push_descriptor
// enabled, and on one without it, where the host hands vksoftmax a
// descriptor pool.
#include <gtest/gtest.h>
#include <vulkan/vulkan.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "vksoftmax/vksoftmax.h"

namespace {

#define VK(call) ASSERT_EQ((call), VK_SUCCESS) << #call

struct Messages {
    std::vector<std::string> list;
};

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT, const VkDebugUtilsMessengerCallbackDataEXT* d,
                                          void* user) {
    const bool sync = d->pMessageIdName && std::strstr(d->pMessageIdName, "SYNC-");
    if ((severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) || sync)
        static_cast<Messages*>(user)->list.push_back(d->pMessage ? d->pMessage : "?");
    return VK_FALSE;
}

// A float64 softmax of each row, for checking.
std::vector<double> reference(const float* x, uint32_t rows, uint32_t cols, bool log) {
    std::vector<double> y(size_t(rows) * cols);
    for (uint32_t r = 0; r < rows; ++r) {
        double m = -INFINITY, d = 0;
        for (uint32_t c = 0; c < cols; ++c) m = std::max(m, double(x[r * cols + c]));
        for (uint32_t c = 0; c < cols; ++c) d += std::exp(x[r * cols + c] - m);
        for (uint32_t c = 0; c < cols; ++c)
            y[r * cols + c] = log ? x[r * cols + c] - m - std::log(d) : std::exp(x[r * cols + c] - m) / d;
    }
    return y;
}

// How vksoftmax gets its buffers into the shader on the host's device.
enum class Descriptors { push, host_pool };

class Embed : public ::testing::TestWithParam<Descriptors> {
protected:
    void SetUp() override {
        create_instance();
        if (!HasFatalFailure()) create_device();
    }

    // The host's instance: with the validation layer and synchronization
    // validation where the layer is installed, its messages collected.
    void create_instance() {
        VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
        app.apiVersion = VK_API_VERSION_1_1;
        const char* layer = "VK_LAYER_KHRONOS_validation";
        const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
        uint32_t nl = 0;
        VK(vkEnumerateInstanceLayerProperties(&nl, nullptr));
        std::vector<VkLayerProperties> layers(nl);
        VK(vkEnumerateInstanceLayerProperties(&nl, layers.data()));
        layers.resize(nl);
        for (auto& l : layers) validation_ = validation_ || std::strcmp(l.layerName, layer) == 0;
        VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
        VkValidationFeaturesEXT vf{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
        vf.enabledValidationFeatureCount = 1;
        vf.pEnabledValidationFeatures = enables;
        VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
        ici.pApplicationInfo = &app;
        if (validation_) {
            ici.enabledLayerCount = 1;
            ici.ppEnabledLayerNames = &layer;
            ici.enabledExtensionCount = 1;
            ici.ppEnabledExtensionNames = &ext;
            ici.pNext = &vf;
        }
        VK(vkCreateInstance(&ici, nullptr, &instance_));
        if (validation_) {
            auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
                vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
            VkDebugUtilsMessengerCreateInfoEXT mci{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
            mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
            mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
            mci.pfnUserCallback = on_message;
            mci.pUserData = &messages_;
            ASSERT_NE(create, nullptr) << "vkCreateDebugUtilsMessengerEXT";
            VK(create(instance_, &mci, nullptr, &messenger_));
        }
    }

    // The host's device on the first physical device, with one compute
    // queue, VK_KHR_push_descriptor enabled or a descriptor pool of the
    // host's, as the test's parameter says.
    void create_device() {
        uint32_t n = 1;
        VkResult r = vkEnumeratePhysicalDevices(instance_, &n, &pd_);
        ASSERT_TRUE((r == VK_SUCCESS || r == VK_INCOMPLETE) && n == 1);
        uint32_t nq = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(pd_, &nq, nullptr);
        std::vector<VkQueueFamilyProperties> fams(nq);
        vkGetPhysicalDeviceQueueFamilyProperties(pd_, &nq, fams.data());
        while (family_ < nq && !(fams[family_].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++family_;
        float prio = 1.f;
        VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
        qci.queueFamilyIndex = family_;
        qci.queueCount = 1;
        qci.pQueuePriorities = &prio;
        const char* dext = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
        VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
        dci.queueCreateInfoCount = 1;
        dci.pQueueCreateInfos = &qci;
        dci.enabledExtensionCount = GetParam() == Descriptors::push ? 1 : 0;
        dci.ppEnabledExtensionNames = &dext;
        VK(vkCreateDevice(pd_, &dci, nullptr, &dev_));
        if (GetParam() == Descriptors::host_pool) pool_ = descriptor_pool();
        vkGetDeviceQueue(dev_, family_, 0, &queue_);
        VkPhysicalDeviceProperties props;
        vkGetPhysicalDeviceProperties(pd_, &props);
        align_ = props.limits.minStorageBufferOffsetAlignment;
        VkPhysicalDeviceMemoryProperties mp;
        vkGetPhysicalDeviceMemoryProperties(pd_, &mp);
        memory_ = mp;
    }
    void TearDown() override {
        if (dev_) {
            EXPECT_EQ(vkDeviceWaitIdle(dev_), VK_SUCCESS) << "vkDeviceWaitIdle before the host's teardown";
            for (auto& b : buffers_) {
                vkDestroyBuffer(dev_, b.first, nullptr);
                vkFreeMemory(dev_, b.second, nullptr);
            }
            for (VkCommandPool p : pools_) vkDestroyCommandPool(dev_, p, nullptr);
            for (VkDescriptorPool p : descriptor_pools_) vkDestroyDescriptorPool(dev_, p, nullptr);
            vkDestroyDevice(dev_, nullptr);
        }
        if (messenger_) {
            auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
                vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
            destroy(instance_, messenger_, nullptr);
        }
        if (instance_) vkDestroyInstance(instance_, nullptr);
        std::string all;
        for (auto& m : messages_.list) all += "\n  " + m;
        EXPECT_TRUE(messages_.list.empty()) << messages_.list.size() << " validation message(s):" << all;
    }

    vksm_context_desc desc() const {
        vksm_context_desc d{};
        d.instance = instance_;
        d.physical_device = pd_;
        d.device = dev_;
        d.queue_family = family_;
        d.get_instance_proc_addr = vkGetInstanceProcAddr;
        d.push_descriptor = GetParam() == Descriptors::push;
        d.descriptor_pool = pool_;
        return d;
    }

    // A vksm context on the host's device (desc()).
    void create_context(vksm_context* ctx) {
        const vksm_context_desc host_desc = desc();
        char why[256] = "";
        ASSERT_EQ(vksm_context_create(&host_desc, ctx, why, sizeof why), VKSM_SUCCESS) << why;
    }

    // A pool of the host's for vksoftmax's descriptor sets: 64 records.
    VkDescriptorPool descriptor_pool() {
        VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 3 * 64};
        VkDescriptorPoolCreateInfo ci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
        ci.maxSets = 64;
        ci.poolSizeCount = 1;
        ci.pPoolSizes = &size;
        VkDescriptorPool pool = VK_NULL_HANDLE;
        EXPECT_EQ(vkCreateDescriptorPool(dev_, &ci, nullptr, &pool), VK_SUCCESS);
        descriptor_pools_.push_back(pool);
        return pool;
    }

    // A host-visible buffer (the host maps it to write and read).
    VkBuffer buffer(VkDeviceSize size, void** map) {
        VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
        bi.size = size;
        bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
        VkBuffer b = VK_NULL_HANDLE;
        EXPECT_EQ(vkCreateBuffer(dev_, &bi, nullptr, &b), VK_SUCCESS);
        VkMemoryRequirements req;
        vkGetBufferMemoryRequirements(dev_, b, &req);
        VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
        ai.allocationSize = req.size;
        const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
        for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
            if ((req.memoryTypeBits & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & want) == want) {
                ai.memoryTypeIndex = i;
                break;
            }
        VkDeviceMemory m = VK_NULL_HANDLE;
        EXPECT_EQ(vkAllocateMemory(dev_, &ai, nullptr, &m), VK_SUCCESS);
        EXPECT_EQ(vkBindBufferMemory(dev_, b, m, 0), VK_SUCCESS);
        EXPECT_EQ(vkMapMemory(dev_, m, 0, VK_WHOLE_SIZE, 0, map), VK_SUCCESS);
        buffers_.push_back({b, m});
        return b;
    }

    // The host's writes made visible to the shaders, and the shaders'
    // writes to the host: the barriers the contract asks of it.
    static void host_writes_to_shaders(VkCommandBuffer cb) {
        VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_HOST_WRITE_BIT, VK_ACCESS_SHADER_READ_BIT};
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_HOST_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &b, 0, nullptr, 0,
                             nullptr);
    }
    static void shader_writes_to_host(VkCommandBuffer cb) {
        VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_HOST_READ_BIT};
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &b, 0, nullptr, 0,
                             nullptr);
    }
    // A command buffer from a pool of its own, begun.
    VkCommandBuffer begun_command_buffer() {
        const VkCommandBuffer cb = command_buffer();
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        EXPECT_EQ(vkBeginCommandBuffer(cb, &bi), VK_SUCCESS);
        return cb;
    }

    VkCommandBuffer command_buffer() {
        VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
        pci.queueFamilyIndex = family_;
        VkCommandPool pool = VK_NULL_HANDLE;
        EXPECT_EQ(vkCreateCommandPool(dev_, &pci, nullptr, &pool), VK_SUCCESS);
        pools_.push_back(pool);
        VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
        ai.commandPool = pool;
        ai.commandBufferCount = 1;
        VkCommandBuffer cb = VK_NULL_HANDLE;
        EXPECT_EQ(vkAllocateCommandBuffers(dev_, &ai, &cb), VK_SUCCESS);
        return cb;
    }

    // A plan's tensors in the host's buffers, not at their starts: the
    // input and output in one buffer (a host-visible map), a workspace, a
    // buffer the host copies the output to, and a command buffer.
    struct HostJob {
        void* map;
        VkBuffer buf;
        VkDeviceSize in_off, out_off, bytes;
        void* ws_map;
        VkBuffer ws;
        VkDeviceSize ws_off, ws_size;
        void* copy_map;
        VkBuffer copy;
        VkCommandBuffer cb;
    };

    // The buffers of a HostJob for `plan` (workspace ws_size bytes at
    // ws_align), its input normal(0, 4) logits.
    HostJob host_job(vksm_plan plan, VkDeviceSize ws_size, VkDeviceSize ws_align, std::mt19937& rng) {
        std::normal_distribution<float> logits(0.f, 4.f);
        HostJob j{};
        j.bytes = vksm_plan_tensor_bytes(plan);
        j.in_off = 3 * align_;  // not at the start of the host's buffer
        j.out_off = j.in_off + (j.bytes + align_ - 1) / align_ * align_ + 5 * align_;
        j.buf = buffer(j.out_off + j.bytes + align_, &j.map);
        j.ws_off = 7 * std::max(align_, ws_align);
        j.ws_size = std::max<VkDeviceSize>(ws_size, 16);
        j.ws = buffer(j.ws_off + j.ws_size, &j.ws_map);
        j.copy = buffer(j.bytes, &j.copy_map);
        float* x = reinterpret_cast<float*>(static_cast<char*>(j.map) + j.in_off);
        for (uint64_t k = 0; k < j.bytes / 4; ++k) x[k] = logits(rng);
        j.cb = command_buffer();
        return j;
    }

    // Records into the job's command buffer: host work before (a transfer
    // poisons the output and the workspace), `plan`, host work after (a
    // copy of the output elsewhere, then to the host), with the barriers
    // the contract asks of the host. Returns vksm_record's result.
    static vksm_result record_between_host_work(const HostJob& j, vksm_plan plan) {
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        EXPECT_EQ(vkBeginCommandBuffer(j.cb, &bi), VK_SUCCESS) << "vkBeginCommandBuffer";
        vkCmdFillBuffer(j.cb, j.buf, j.out_off, j.bytes, 0x7fc00000u);
        vkCmdFillBuffer(j.cb, j.ws, 0, VK_WHOLE_SIZE, 0xdeadbeefu);
        VkMemoryBarrier before{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr,
                               VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
                               VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
        vkCmdPipelineBarrier(j.cb, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &before, 0, nullptr, 0, nullptr);
        const vksm_result recorded = vksm_record(plan, j.cb, {j.buf, j.in_off, j.bytes}, {j.buf, j.out_off, j.bytes},
                                                 {j.ws, j.ws_off, j.ws_size}, VK_NULL_HANDLE, 0);
        VkMemoryBarrier after{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_SHADER_WRITE_BIT,
                              VK_ACCESS_TRANSFER_READ_BIT};
        vkCmdPipelineBarrier(j.cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &after, 0,
                             nullptr, 0, nullptr);
        VkBufferCopy region{j.out_off, 0, j.bytes};
        vkCmdCopyBuffer(j.cb, j.buf, j.copy, 1, &region);
        VkMemoryBarrier host{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_TRANSFER_WRITE_BIT,
                             VK_ACCESS_HOST_READ_BIT};
        vkCmdPipelineBarrier(j.cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &host, 0, nullptr, 0,
                             nullptr);
        EXPECT_EQ(vkEndCommandBuffer(j.cb), VK_SUCCESS) << "vkEndCommandBuffer";
        return recorded;
    }

    void submit(const std::vector<VkCommandBuffer>& cbs) {
        VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
        si.commandBufferCount = static_cast<uint32_t>(cbs.size());
        si.pCommandBuffers = cbs.data();
        ASSERT_EQ(vkQueueSubmit(queue_, 1, &si, VK_NULL_HANDLE), VK_SUCCESS);
        ASSERT_EQ(vkQueueWaitIdle(queue_), VK_SUCCESS);
    }

    bool validation_ = false;
    Messages messages_;
    VkInstance instance_ = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
    VkPhysicalDevice pd_ = VK_NULL_HANDLE;
    VkDevice dev_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    uint32_t family_ = 0;
    VkDeviceSize align_ = 16;
    VkPhysicalDeviceMemoryProperties memory_{};
    std::vector<std::pair<VkBuffer, VkDeviceMemory>> buffers_;
    std::vector<VkCommandPool> pools_;
    VkDescriptorPool pool_ = VK_NULL_HANDLE;  // host_pool: the one desc() hands over
    std::vector<VkDescriptorPool> descriptor_pools_;
};

std::string descriptors_name(const ::testing::TestParamInfo<Descriptors>& info) {
    return info.param == Descriptors::push ? "PushDescriptors" : "HostDescriptorPool";
}

// Host work before (a transfer fill of the workspace region and the
// host's writes), the softmax at non-zero offsets, host work after (a copy
// of the output): synchronization validation checks the barrier contract.
TEST_P(Embed, RecordsIntoTheHostsCommandBufferAtOffsets) {
    std::printf("embedding test on validation layer %s\n", validation_ ? "on (with synchronization validation)" : "OFF");
    vksm_context ctx = nullptr;
    ASSERT_NO_FATAL_FAILURE(create_context(&ctx));
    // One short-row plan and one split (two-pass) plan.
    const uint32_t rows[2] = {37, 3}, cols[2] = {1000, 70001};
    vksm_plan plans[2];
    for (int i = 0; i < 2; ++i) {
        vksm_problem p{rows[i], cols[i], 1, VKSM_F32, i == 1, 1.0, VKSM_PRECISION_FAST};
        ASSERT_EQ(vksm_plan_create(ctx, &p, &plans[i]), VKSM_SUCCESS) << vksm_context_last_error(ctx);
    }
    ASSERT_EQ(vksm_plan_passes(plans[1]), 2u);
    VkDeviceSize ws_size = 0, ws_align = 0;
    vksm_plan_workspace(plans[1], &ws_size, &ws_align);
    ASSERT_GT(ws_size, 0u);

    std::mt19937 rng(std::random_device{}());
    HostJob jobs[2];
    for (int i = 0; i < 2; ++i) jobs[i] = host_job(plans[i], ws_size, ws_align, rng);

    // Two plans recorded from two threads, each into its own command buffer.
    std::vector<std::thread> threads;
    vksm_result results[2] = {VKSM_ERROR_VULKAN, VKSM_ERROR_VULKAN};
    for (int i = 0; i < 2; ++i)
        threads.emplace_back([&, i] { results[i] = record_between_host_work(jobs[i], plans[i]); });
    for (auto& t : threads) t.join();
    ASSERT_EQ(results[0], VKSM_SUCCESS) << vksm_context_last_error(ctx);
    ASSERT_EQ(results[1], VKSM_SUCCESS) << vksm_context_last_error(ctx);
    submit({jobs[0].cb, jobs[1].cb});

    for (int i = 0; i < 2; ++i) {
        const HostJob& j = jobs[i];
        const float* x = reinterpret_cast<const float*>(static_cast<const char*>(j.map) + j.in_off);
        const float* y = static_cast<const float*>(j.copy_map);
        const auto ref = reference(x, rows[i], cols[i], i == 1);
        for (size_t k = 0; k < ref.size(); ++k)
            ASSERT_LE(std::fabs(y[k] - ref[k]), 1e-5 * std::max(std::fabs(ref[k]), i == 1 ? 1.0 : 1e-30))
                << "plan " << i << " element " << k << ": got " << y[k] << ", want " << ref[k];
    }
    vksm_plan_destroy(plans[0]);
    vksm_plan_destroy(plans[1]);
    vksm_context_destroy(ctx);
}

// vksm contexts created, used and destroyed from several threads at once on
// the host's device: each loads its own function tables from the host's
// vkGetInstanceProcAddr, so none disturbs another. Each thread's plan then
// runs, recorded into the host's command buffer, against the reference.
TEST_P(Embed, ContextsFromSeveralThreads) {
    constexpr int kThreads = 4;
    // A pool per context (one host pool must not be used by two at once).
    vksm_context_desc descs[kThreads];
    for (int t = 0; t < kThreads; ++t) {
        descs[t] = desc();
        if (GetParam() == Descriptors::host_pool) descs[t].descriptor_pool = descriptor_pool();
    }
    vksm_context contexts[kThreads] = {};
    vksm_plan plans[kThreads] = {};
    vksm_result results[kThreads];
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            // One context made and dropped first, so that creation and
            // destruction overlap with the other threads' too.
            vksm_context scratch = nullptr;
            results[t] = vksm_context_create(&descs[t], &scratch, nullptr, 0);
            if (results[t] != VKSM_SUCCESS) return;
            vksm_context_destroy(scratch);
            results[t] = vksm_context_create(&descs[t], &contexts[t], nullptr, 0);
            if (results[t] != VKSM_SUCCESS) return;
            const vksm_problem p{uint32_t(5 + t), uint32_t(100 + 37 * t), 1, VKSM_F32, 0, 1.0, VKSM_PRECISION_FAST};
            results[t] = vksm_plan_create(contexts[t], &p, &plans[t]);
        });
    for (auto& thread : threads) thread.join();
    for (int t = 0; t < kThreads; ++t) ASSERT_EQ(results[t], VKSM_SUCCESS) << "thread " << t;

    std::mt19937 rng(11);
    std::normal_distribution<float> logits(0.f, 4.f);
    const VkCommandBuffer cb = begun_command_buffer();
    VkMemoryBarrier host_writes{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_HOST_WRITE_BIT,
                                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_HOST_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &host_writes, 0,
                         nullptr, 0, nullptr);
    void* maps[kThreads][2];
    for (int t = 0; t < kThreads; ++t) {
        const VkDeviceSize bytes = vksm_plan_tensor_bytes(plans[t]);
        const VkBuffer in = buffer(bytes, &maps[t][0]), out = buffer(bytes, &maps[t][1]);
        float* x = static_cast<float*>(maps[t][0]);
        for (VkDeviceSize k = 0; k < bytes / 4; ++k) x[k] = logits(rng);
        ASSERT_EQ(vksm_record(plans[t], cb, {in, 0, bytes}, {out, 0, bytes}, {VK_NULL_HANDLE, 0, 0}, VK_NULL_HANDLE, 0),
                  VKSM_SUCCESS)
            << vksm_context_last_error(contexts[t]);
    }
    VkMemoryBarrier shader_writes{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_SHADER_WRITE_BIT,
                                  VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &shader_writes, 0,
                         nullptr, 0, nullptr);
    vkEndCommandBuffer(cb);
    submit({cb});
    for (int t = 0; t < kThreads; ++t) {
        const uint32_t rows = 5 + t, cols = 100 + 37 * t;
        const auto ref = reference(static_cast<const float*>(maps[t][0]), rows, cols, false);
        const float* y = static_cast<const float*>(maps[t][1]);
        for (size_t k = 0; k < ref.size(); ++k)
            ASSERT_LE(std::fabs(y[k] - ref[k]), 1e-5 * std::max(std::fabs(ref[k]), 1e-30))
                << "context of thread " << t << ", element " << k << ": got " << y[k] << ", want " << ref[k];
    }
    for (int t = 0; t < kThreads; ++t) {
        vksm_plan_destroy(plans[t]);
        vksm_context_destroy(contexts[t]);
    }
}

// Misuse of the C API is refused with an error code and a message, never a
// crash. Creating a context: NULL pointers, no device, message buffers of
// 0 and 1 byte; a corrupt pipeline-cache blob is ignored by the driver, not
// trusted.
TEST_P(Embed, ContextMisuseIsRefused) {
    const vksm_context_desc host_desc = desc();
    vksm_context ctx = reinterpret_cast<vksm_context>(&messages_);  // must be cleared on failure
    EXPECT_EQ(vksm_context_create(nullptr, &ctx, nullptr, 0), VKSM_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(ctx, nullptr) << "*out not cleared";
    EXPECT_EQ(vksm_context_create(&host_desc, nullptr, nullptr, 0), VKSM_ERROR_INVALID_ARGUMENT);
    vksm_context_desc no_device = host_desc;
    no_device.device = VK_NULL_HANDLE;
    char one[1] = {'x'};
    EXPECT_EQ(vksm_context_create(&no_device, &ctx, one, sizeof one), VKSM_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(one[0], '\0') << "a 1-byte message buffer holds the terminator only";
    char untouched[4] = "abc";
    EXPECT_EQ(vksm_context_create(&no_device, &ctx, untouched, 0), VKSM_ERROR_INVALID_ARGUMENT);
    EXPECT_STREQ(untouched, "abc") << "a 0-byte message buffer was written";

    std::vector<uint8_t> garbage(300, 0xA5);
    vksm_context_desc corrupt = host_desc;
    corrupt.pipeline_cache_data = garbage.data();
    corrupt.pipeline_cache_size = garbage.size();
    char why[256] = "";
    ASSERT_EQ(vksm_context_create(&corrupt, &ctx, why, sizeof why), VKSM_SUCCESS) << why;
    size_t blob = 0;
    EXPECT_EQ(vksm_pipeline_cache_data(ctx, nullptr, nullptr), VKSM_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ(vksm_pipeline_cache_data(ctx, nullptr, &blob), VKSM_SUCCESS);
    if (blob > 1) {
        std::vector<uint8_t> small(blob - 1);
        size_t small_size = small.size();
        EXPECT_EQ(vksm_pipeline_cache_data(ctx, small.data(), &small_size), VKSM_ERROR_INVALID_ARGUMENT);
    }
    vksm_context_destroy(ctx);
    vksm_context_destroy(nullptr);
    EXPECT_STREQ(vksm_context_last_error(nullptr), "no context");
}

// Creating a plan: NULL pointers, unknown enums, a negative temperature or
// scale and the two disagreeing, absurd shapes; the plan's queries on NULL.
TEST_P(Embed, PlanMisuseIsRefused) {
    vksm_context ctx = nullptr;
    ASSERT_NO_FATAL_FAILURE(create_context(&ctx));
    vksm_plan plan = nullptr;
    const vksm_problem good{4, 1000, 1, VKSM_F32, 0, 1.0, VKSM_PRECISION_FAST};
    EXPECT_EQ(vksm_plan_create(ctx, nullptr, &plan), VKSM_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(vksm_plan_create(nullptr, &good, &plan), VKSM_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(vksm_plan_create(ctx, &good, nullptr), VKSM_ERROR_INVALID_ARGUMENT);
    vksm_problem bad = good;
    const int seven = 7, nine = 9;  // what a C host may store in an enum field
    std::memcpy(&bad.dtype, &seven, sizeof bad.dtype);
    EXPECT_EQ(vksm_plan_create(ctx, &bad, &plan), VKSM_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(vksm_context_last_error(ctx)).find("dtype"), std::string::npos) << vksm_context_last_error(ctx);
    bad = good;
    std::memcpy(&bad.precision, &nine, sizeof bad.precision);
    EXPECT_EQ(vksm_plan_create(ctx, &bad, &plan), VKSM_ERROR_INVALID_ARGUMENT);
    bad = good;
    bad.temperature = -1.0;
    EXPECT_EQ(vksm_plan_create(ctx, &bad, &plan), VKSM_ERROR_INVALID_ARGUMENT);
    bad = good;
    bad.scale = -2.0;
    EXPECT_EQ(vksm_plan_create(ctx, &bad, &plan), VKSM_ERROR_INVALID_ARGUMENT);
    bad.scale = 0.5;  // with a temperature of 3: scale is 1/T, they disagree
    bad.temperature = 3.0;
    EXPECT_EQ(vksm_plan_create(ctx, &bad, &plan), VKSM_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(vksm_context_last_error(ctx)).find("disagree"), std::string::npos) << vksm_context_last_error(ctx);
    bad = good;
    bad.outer = bad.axis = bad.inner = uint64_t(1) << 40;  // 2^120 elements
    EXPECT_EQ(vksm_plan_create(ctx, &bad, &plan), VKSM_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(vksm_context_last_error(ctx)).find("2^64"), std::string::npos) << vksm_context_last_error(ctx);
    bad = good;
    bad.axis = uint64_t(1) << 33;  // over 2^32 elements
    EXPECT_EQ(vksm_plan_create(ctx, &bad, &plan), VKSM_ERROR_UNSUPPORTED);
    EXPECT_EQ(plan, nullptr);
    EXPECT_EQ(vksm_plan_tensor_bytes(nullptr), 0u);
    EXPECT_EQ(vksm_plan_passes(nullptr), 0u);
    VkDeviceSize size = 1, alignment = 1;
    vksm_plan_workspace(nullptr, &size, &alignment);
    EXPECT_EQ(size, 0u);
    vksm_plan_destroy(nullptr);
    vksm_context_destroy(ctx);
}

// Recording a split plan (it needs a workspace) against bad buffers: none,
// a range short of the tensor, a misaligned offset, no or a short
// workspace; a NULL plan or command buffer. Nothing is recorded.
TEST_P(Embed, RecordMisuseIsRefused) {
    vksm_context ctx = nullptr;
    ASSERT_NO_FATAL_FAILURE(create_context(&ctx));
    vksm_plan plan = nullptr;
    const vksm_problem split{2, 70001, 1, VKSM_F32, 0, 1.0, VKSM_PRECISION_FAST};
    ASSERT_EQ(vksm_plan_create(ctx, &split, &plan), VKSM_SUCCESS) << vksm_context_last_error(ctx);
    ASSERT_EQ(vksm_plan_passes(plan), 2u);
    const VkDeviceSize bytes = vksm_plan_tensor_bytes(plan);
    VkDeviceSize ws_size = 0, ws_align = 0;
    vksm_plan_workspace(plan, &ws_size, &ws_align);
    void* map = nullptr;
    const VkBuffer buf = buffer(2 * bytes + 4 * align_, &map);
    const VkBuffer ws = buffer(ws_size + ws_align, &map);
    const VkCommandBuffer cb = begun_command_buffer();
    const vksm_buffer in{buf, 0, bytes}, out{buf, bytes + align_ - bytes % align_, bytes}, work{ws, 0, ws_size};
    struct Case {
        const char* what;
        vksm_buffer in, out, work;
    };
    for (const Case& c : {Case{"no input buffer", {VK_NULL_HANDLE, 0, bytes}, out, work},
                          Case{"input range short of the tensor", {buf, 0, bytes - 4}, out, work},
                          Case{"output offset misaligned", in, {buf, out.offset + 1, bytes}, work},
                          Case{"no workspace", in, out, {VK_NULL_HANDLE, 0, 0}},
                          Case{"workspace short", in, out, {ws, 0, ws_size - 16}}}) {
        EXPECT_EQ(vksm_record(plan, cb, c.in, c.out, c.work, VK_NULL_HANDLE, 0), VKSM_ERROR_INVALID_ARGUMENT) << c.what;
        EXPECT_STRNE(vksm_context_last_error(ctx), "") << c.what;
    }
    EXPECT_EQ(vksm_record(nullptr, cb, in, out, work, VK_NULL_HANDLE, 0), VKSM_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(vksm_record(plan, VK_NULL_HANDLE, in, out, work, VK_NULL_HANDLE, 0), VKSM_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(vkEndCommandBuffer(cb), VK_SUCCESS) << "vkEndCommandBuffer after the refused calls";
    vksm_plan_destroy(plan);
    vksm_context_destroy(ctx);
}

// Four independent problems recorded as one batch into one host buffer
// (a short-row plan, a split log-softmax, tiny rows, and a plan sharing the
// first one's input), with the host's barriers before and after only,
// each checked against the reference. A batch whose outputs overlap is
// refused, saying which problems and where.
TEST_P(Embed, BatchRecordsIndependentProblems) {
    vksm_context ctx = nullptr;
    ASSERT_NO_FATAL_FAILURE(create_context(&ctx));
    const uint32_t rows[4] = {37, 3, 640, 37}, cols[4] = {1000, 70001, 10, 1000};
    const int logs[4] = {0, 1, 0, 1};
    vksm_plan plans[4];
    VkDeviceSize in_off[4], out_off[4], bytes[4], end = align_;
    auto place = [&](VkDeviceSize size) {
        const VkDeviceSize at = end;
        end += (size + align_ - 1) / align_ * align_ + align_;
        return at;
    };
    for (int i = 0; i < 4; ++i) {
        vksm_problem p{rows[i], cols[i], 1, VKSM_F32, logs[i], 1.0, VKSM_PRECISION_FAST};
        ASSERT_EQ(vksm_plan_create(ctx, &p, &plans[i]), VKSM_SUCCESS) << vksm_context_last_error(ctx);
        bytes[i] = vksm_plan_tensor_bytes(plans[i]);
        in_off[i] = i == 3 ? in_off[0] : place(bytes[i]);  // problem 3 reads problem 0's input
        out_off[i] = place(bytes[i]);
    }
    ASSERT_EQ(vksm_plan_passes(plans[1]), 2u) << "problem 1 is meant to be split";
    VkDeviceSize ws_size = 0, ws_align = 0;
    vksm_plan_workspace(plans[1], &ws_size, &ws_align);
    void *map = nullptr, *ws_map = nullptr;
    VkBuffer buf = buffer(end, &map);
    VkBuffer ws = buffer(ws_size, &ws_map);
    std::mt19937 rng(std::random_device{}());
    std::normal_distribution<float> logits(0.f, 4.f);
    for (int i = 0; i < 3; ++i) {
        float* x = reinterpret_cast<float*>(static_cast<char*>(map) + in_off[i]);
        for (uint64_t k = 0; k < bytes[i] / 4; ++k) x[k] = logits(rng);
    }
    vksm_batch_item items[4];
    for (int i = 0; i < 4; ++i)
        items[i] = {plans[i], {buf, in_off[i], bytes[i]}, {buf, out_off[i], bytes[i]}, {ws, 0, i == 1 ? ws_size : 0}};

    vksm_batch_item overlapping[2] = {items[0], items[2]};
    overlapping[1].output.offset = out_off[0] + align_;  // inside problem 0's output
    const VkCommandBuffer cb = begun_command_buffer();
    EXPECT_EQ(vksm_record_batch(overlapping, 2, cb, VK_NULL_HANDLE, 0), VKSM_ERROR_INVALID_ARGUMENT)
        << "outputs overlapping within one buffer were accepted";
    EXPECT_NE(std::strstr(vksm_context_last_error(ctx), "batch problems 0 and 1 overlap"), nullptr)
        << "the refusal does not say which problems overlap: " << vksm_context_last_error(ctx);

    VkMemoryBarrier host{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_HOST_WRITE_BIT,
                         VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_HOST_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &host, 0, nullptr, 0,
                         nullptr);
    ASSERT_EQ(vksm_record_batch(items, 4, cb, VK_NULL_HANDLE, 0), VKSM_SUCCESS) << vksm_context_last_error(ctx);
    shader_writes_to_host(cb);
    vkEndCommandBuffer(cb);
    submit({cb});

    for (int i = 0; i < 4; ++i) {
        const float* x = reinterpret_cast<const float*>(static_cast<const char*>(map) + in_off[i]);
        const float* y = reinterpret_cast<const float*>(static_cast<const char*>(map) + out_off[i]);
        const auto ref = reference(x, rows[i], cols[i], logs[i] != 0);
        for (size_t k = 0; k < ref.size(); ++k)
            ASSERT_LE(std::fabs(y[k] - ref[k]), 1e-5 * std::max(std::fabs(ref[k]), logs[i] ? 1.0 : 1e-30))
                << "batch problem " << i << " (" << rows[i] << "x" << cols[i] << (logs[i] ? ", log" : "")
                << ") element " << k << ": got " << y[k] << ", want " << ref[k];
    }
    for (vksm_plan plan : plans) vksm_plan_destroy(plan);
    vksm_context_destroy(ctx);
}

TEST_P(Embed, TimestampsIntoTheHostsQueryPool) {
    vksm_context ctx = nullptr;
    ASSERT_NO_FATAL_FAILURE(create_context(&ctx));
    vksm_problem p{2, 70001, 1, VKSM_F32, 0, 1.0, VKSM_PRECISION_FAST};
    vksm_plan plan = nullptr;
    ASSERT_EQ(vksm_plan_create(ctx, &p, &plan), VKSM_SUCCESS) << vksm_context_last_error(ctx);
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = 8;
    VkQueryPool qp = VK_NULL_HANDLE;
    VK(vkCreateQueryPool(dev_, &qi, nullptr, &qp));
    void *map, *wmap;
    const VkDeviceSize bytes = vksm_plan_tensor_bytes(plan);
    VkBuffer b = buffer(2 * bytes + 2 * align_, &map);
    VkDeviceSize ws_size, ws_align;
    vksm_plan_workspace(plan, &ws_size, &ws_align);
    VkBuffer w = buffer(ws_size, &wmap);
    std::memset(map, 0, bytes);  // a constant row: the output is 1 / cols everywhere
    const VkCommandBuffer cb = begun_command_buffer();
    vkCmdResetQueryPool(cb, qp, 0, 8);
    host_writes_to_shaders(cb);
    const VkDeviceSize out = (bytes + align_ - 1) / align_ * align_ + align_;
    ASSERT_EQ(vksm_record(plan, cb, {b, 0, bytes}, {b, out, bytes}, {w, 0, ws_size}, qp, 3), VKSM_SUCCESS)
        << vksm_context_last_error(ctx);
    shader_writes_to_host(cb);
    vkEndCommandBuffer(cb);
    submit({cb});
    uint64_t t[3];
    VK(vkGetQueryPoolResults(dev_, qp, 3, 3, sizeof t, t, sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    EXPECT_LE(t[0], t[1]);
    EXPECT_LE(t[1], t[2]);
    EXPECT_LT(t[0], t[2]) << "two passes took no time";
    const float* y = reinterpret_cast<const float*>(static_cast<const char*>(map) + out);
    EXPECT_NEAR(y[12345], 1.0 / 70001, 1e-5 / 70001);
    vkDestroyQueryPool(dev_, qp, nullptr);
    vksm_plan_destroy(plan);
    vksm_context_destroy(ctx);
}

// The attention options through the C API on the host's buffers: 2 heads
// x 2 query rows of 4, a (1, 1, 2, 4) fp32 mask, causal, a sink per head
// and the log-sum-exp, against values worked out by hand.
TEST_P(Embed, AttentionOptionsOnTheHostsBuffers) {
    vksm_context ctx = nullptr;
    ASSERT_NO_FATAL_FAILURE(create_context(&ctx));
    vksm_problem p{};
    p.outer = 4;
    p.axis = 4;
    p.inner = 1;
    p.dtype = VKSM_F32;
    p.heads = 2;
    p.mask = 1;
    p.mask_dtype = VKSM_F32;
    p.causal = 1;
    p.causal_offset = 1;  // query row 0 sees columns 0-1, row 1 columns 0-2
    p.sinks = 1;
    p.lse = 1;
    vksm_plan plan = nullptr;
    ASSERT_EQ(vksm_plan_create(ctx, &p, &plan), VKSM_SUCCESS) << vksm_context_last_error(ctx);
    VkDeviceSize mask_bytes, sinks_bytes, lse_bytes;
    vksm_plan_attention_bytes(plan, &mask_bytes, &sinks_bytes, &lse_bytes);
    EXPECT_EQ(mask_bytes, 2u * 4u * 4u);
    EXPECT_EQ(sinks_bytes, 2u * 4u);
    EXPECT_EQ(lse_bytes, 4u * 4u);
    void *x_map, *y_map, *m_map, *s_map, *l_map;
    VkBuffer x = buffer(64, &x_map), y = buffer(64, &y_map), m = buffer(mask_bytes, &m_map), s = buffer(sinks_bytes, &s_map),
             l = buffer(lse_bytes, &l_map);
    const float inf = std::numeric_limits<float>::infinity();
    // Every logit 0; the mask hides column 1 of query row 1 (-inf) and
    // lifts column 0 of query row 0 by ln 2.
    std::memset(x_map, 0, 64);
    const float mask[8] = {std::log(2.0f), 0, 0, 0, 0, -inf, 0, 0};
    std::memcpy(m_map, mask, sizeof mask);
    const float sinks[2] = {-inf, 0.0f};  // head 0: none; head 1: one more e^0
    std::memcpy(s_map, sinks, sizeof sinks);
    const VkCommandBuffer cb = begun_command_buffer();
    host_writes_to_shaders(cb);
    ASSERT_EQ(vksm_record_attention(plan, cb, {x, 0, 64}, {y, 0, 64}, {VK_NULL_HANDLE, 0, 0}, {m, 0, mask_bytes},
                                    {s, 0, sinks_bytes}, {l, 0, lse_bytes}, VK_NULL_HANDLE, 0),
              VKSM_SUCCESS)
        << vksm_context_last_error(ctx);
    shader_writes_to_host(cb);
    vkEndCommandBuffer(cb);
    submit({cb});
    const float* out = static_cast<const float*>(y_map);
    const float* lse = static_cast<const float*>(l_map);
    // Head 0 (no sink): row 0 sees {2, 1} -> 2/3, 1/3; row 1 sees columns
    // 0 and 2 -> 1/2, 0, 1/2. Head 1 (sink e^0): row 0 {2, 1} + 1 -> 1/2,
    // 1/4; row 1 {1, 1} + 1 -> 1/3, 0, 1/3.
    const float want[16] = {2.f / 3, 1.f / 3, 0, 0, 0.5f, 0, 0.5f, 0, 0.5f, 0.25f, 0, 0, 1.f / 3, 0, 1.f / 3, 0};
    for (int i = 0; i < 16; ++i) EXPECT_NEAR(out[i], want[i], 1e-6) << "element " << i;
    const float want_lse[4] = {std::log(3.0f), std::log(2.0f), std::log(4.0f), std::log(3.0f)};
    for (int r = 0; r < 4; ++r) EXPECT_NEAR(lse[r], want_lse[r], 1e-6) << "row " << r << " log-sum-exp";
    // Without the log-sum-exp buffer the plan cannot record.
    EXPECT_EQ(vksm_record_attention(plan, cb, {x, 0, 64}, {y, 0, 64}, {VK_NULL_HANDLE, 0, 0}, {m, 0, mask_bytes},
                                    {s, 0, sinks_bytes}, {VK_NULL_HANDLE, 0, 0}, VK_NULL_HANDLE, 0),
              VKSM_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(vksm_context_last_error(ctx)).find("log-sum-exp"), std::string::npos)
        << vksm_context_last_error(ctx);
    vksm_plan_destroy(plan);
    vksm_context_destroy(ctx);
}

// A 16-bit mask of an odd element count needs whole 32-bit words: an fp16
// (3, 5) mask over 3 f32 rows of 5 takes 32 bytes, not its elements' 30
// (the shaders read it two elements to a word); a range of 30 is refused,
// one of 32 gives the last element its mask (1.0: e / (4 + e)).
TEST_P(Embed, OddSixteenBitMaskNeedsWholeWords) {
    vksm_context ctx = nullptr;
    ASSERT_NO_FATAL_FAILURE(create_context(&ctx));
    vksm_problem p{};
    p.outer = 3;
    p.axis = 5;
    p.inner = 1;
    p.dtype = VKSM_F32;
    p.mask = 1;
    p.mask_dtype = VKSM_F16;
    vksm_plan plan = nullptr;
    ASSERT_EQ(vksm_plan_create(ctx, &p, &plan), VKSM_SUCCESS) << vksm_context_last_error(ctx);
    VkDeviceSize mask_bytes = 0;
    vksm_plan_attention_bytes(plan, &mask_bytes, nullptr, nullptr);
    EXPECT_EQ(mask_bytes, 32u) << "15 fp16 elements";
    void *x_map, *y_map, *m_map;
    VkBuffer x = buffer(60, &x_map), y = buffer(60, &y_map), m = buffer(32, &m_map);
    std::memset(x_map, 0, 60);
    std::memset(m_map, 0, 32);
    const uint16_t one = 0x3C00;  // fp16 1.0, the mask's last element
    std::memcpy(static_cast<char*>(m_map) + 28, &one, sizeof one);
    const VkCommandBuffer cb = begun_command_buffer();
    EXPECT_EQ(vksm_record_attention(plan, cb, {x, 0, 60}, {y, 0, 60}, {VK_NULL_HANDLE, 0, 0}, {m, 0, 30}, {}, {},
                                    VK_NULL_HANDLE, 0),
              VKSM_ERROR_INVALID_ARGUMENT)
        << "a mask range of its elements' 30 bytes";
    EXPECT_NE(std::string(vksm_context_last_error(ctx)).find("32"), std::string::npos) << vksm_context_last_error(ctx);
    host_writes_to_shaders(cb);
    ASSERT_EQ(vksm_record_attention(plan, cb, {x, 0, 60}, {y, 0, 60}, {VK_NULL_HANDLE, 0, 0}, {m, 0, mask_bytes}, {},
                                    {}, VK_NULL_HANDLE, 0),
              VKSM_SUCCESS)
        << vksm_context_last_error(ctx);
    shader_writes_to_host(cb);
    ASSERT_EQ(vkEndCommandBuffer(cb), VK_SUCCESS);
    submit({cb});
    const float* out = static_cast<const float*>(y_map);
    const double e = std::exp(1.0);
    for (int i = 0; i < 14; ++i) EXPECT_NEAR(out[i], i < 10 ? 0.2 : 1.0 / (4 + e), 1e-6) << "element " << i;
    EXPECT_NEAR(out[14], e / (4 + e), 1e-6) << "the last element, whose mask is 1";
    vksm_plan_destroy(plan);
    vksm_context_destroy(ctx);
}

// A backward problem of one f32 row of 3, scale 2 (the hand-worked tests below).
vksm_problem backward_row_of_3(int log) {
    vksm_problem p{};
    p.outer = 1;
    p.axis = 3;
    p.inner = 1;
    p.dtype = VKSM_F32;
    p.log = log;
    p.scale = 2.0;
    p.backward = 1;
    return p;
}

// y (the probabilities, or with `log` their logs) and dy of a hand-worked
// row of 3: dy = (1, 0, 2), or (1, 1, 1) with `log`.
void write_row_of_3(int log, const std::array<float, 3>& probs, void* y_map, void* dy_map) {
    float yv[3], dyv[3];
    for (int i = 0; i < 3; ++i) {
        yv[i] = log ? std::log(probs[i]) : probs[i];
        dyv[i] = log ? 1.0f : (i == 0 ? 1.0f : i == 1 ? 0.0f : 2.0f);
    }
    std::memcpy(y_map, yv, 12);
    std::memcpy(dy_map, dyv, 12);
}

// The backward pass through the C API on the host's buffers, worked out by
// hand: softmax y = (1/2, 1/4, 1/4), dy = (1, 0, 2), scale 2: sum y dy =
// 1, dx = 2 y (dy - 1) = (0, -1/2, 1/2); log-softmax of the same row
// (y = log of it), dy = (1, 1, 1): dx = 2 (dy - exp(y) 3) = (-1, 1/2, 1/2).
// Then the refusals: vksm_record() of a backward plan, a missing dy.
TEST_P(Embed, BackwardOnTheHostsBuffers) {
    vksm_context ctx = nullptr;
    ASSERT_NO_FATAL_FAILURE(create_context(&ctx));
    for (int log : {0, 1}) {
        const vksm_problem p = backward_row_of_3(log);
        vksm_plan plan = nullptr;
        ASSERT_EQ(vksm_plan_create(ctx, &p, &plan), VKSM_SUCCESS) << vksm_context_last_error(ctx);
        void *y_map, *dy_map, *dx_map;
        VkBuffer y = buffer(12, &y_map), dy = buffer(12, &dy_map), dx = buffer(12, &dx_map);
        write_row_of_3(log, {0.5f, 0.25f, 0.25f}, y_map, dy_map);
        const VkCommandBuffer cb = begun_command_buffer();
        host_writes_to_shaders(cb);
        ASSERT_EQ(vksm_record_backward(plan, cb, {y, 0, 12}, {dy, 0, 12}, {dx, 0, 12}, {VK_NULL_HANDLE, 0, 0},
                                       VK_NULL_HANDLE, 0),
                  VKSM_SUCCESS)
            << vksm_context_last_error(ctx);
        shader_writes_to_host(cb);
        vkEndCommandBuffer(cb);
        submit({cb});
        const float* out = static_cast<const float*>(dx_map);
        const float want[2][3] = {{0.0f, -0.5f, 0.5f}, {-1.0f, 0.5f, 0.5f}};
        for (int i = 0; i < 3; ++i) EXPECT_NEAR(out[i], want[log][i], 1e-6) << (log ? "log-softmax" : "softmax") << " dx " << i;
        EXPECT_EQ(vksm_record(plan, cb, {y, 0, 12}, {dx, 0, 12}, {VK_NULL_HANDLE, 0, 0}, VK_NULL_HANDLE, 0),
                  VKSM_ERROR_INVALID_ARGUMENT);
        EXPECT_NE(std::string(vksm_context_last_error(ctx)).find("record_backward"), std::string::npos)
            << vksm_context_last_error(ctx);
        EXPECT_EQ(vksm_record_backward(plan, cb, {y, 0, 12}, {VK_NULL_HANDLE, 0, 0}, {dx, 0, 12}, {VK_NULL_HANDLE, 0, 0},
                                       VK_NULL_HANDLE, 0),
                  VKSM_ERROR_INVALID_ARGUMENT);
        EXPECT_NE(std::string(vksm_context_last_error(ctx)).find("gradient dy"), std::string::npos)
            << vksm_context_last_error(ctx);
        vksm_plan_destroy(plan);
    }
    vksm_context_destroy(ctx);
}

// The sinks' gradient through the C API, worked out by hand: a forward
// with a sink left y = (1/4, 1/8, 1/8) (the sink took p = 1/2), dy = (1, 0,
// 2), scale 2: sum y dy = 1/2, dx = 2 y (dy - 1/2) = (1/4, -1/8, 3/8), the
// sink's gradient -p 1/2 = -1/4; log-softmax (y = log of it), dy = (1, 1,
// 1): dx = 2 (1 - 3 exp(y)) = (1/2, 5/4, 5/4), the sink's -p 3 = -3/2;
// recorded alone and as a batch of one. Then the refusal: no buffer for
// the sink gradient.
TEST_P(Embed, BackwardSinkGradientOnTheHostsBuffers) {
    vksm_context ctx = nullptr;
    ASSERT_NO_FATAL_FAILURE(create_context(&ctx));
    for (int log : {0, 1}) {
        vksm_problem p = backward_row_of_3(log);
        p.sinks = 1;
        p.heads = 1;
        vksm_plan plan = nullptr;
        ASSERT_EQ(vksm_plan_create(ctx, &p, &plan), VKSM_SUCCESS) << vksm_context_last_error(ctx);
        EXPECT_EQ(vksm_plan_sink_gradient_bytes(plan), 4u) << "one float for the one row";
        void *y_map, *dy_map, *dx_map, *sink_map;
        VkBuffer y = buffer(12, &y_map), dy = buffer(12, &dy_map), dx = buffer(12, &dx_map),
                 sink = buffer(4, &sink_map);
        write_row_of_3(log, {0.25f, 0.125f, 0.125f}, y_map, dy_map);
        const VkCommandBuffer cb = begun_command_buffer();
        host_writes_to_shaders(cb);
        ASSERT_EQ(vksm_record_backward_sinks(plan, cb, {y, 0, 12}, {dy, 0, 12}, {dx, 0, 12}, {VK_NULL_HANDLE, 0, 0},
                                             {sink, 0, 4}, VK_NULL_HANDLE, 0),
                  VKSM_SUCCESS)
            << vksm_context_last_error(ctx);
        shader_writes_to_host(cb);
        vkEndCommandBuffer(cb);
        submit({cb});
        const float* out = static_cast<const float*>(dx_map);
        const float want[2][3] = {{0.25f, -0.125f, 0.375f}, {0.5f, 1.25f, 1.25f}};
        const char* what = log ? "log-softmax" : "softmax";
        for (int i = 0; i < 3; ++i) EXPECT_NEAR(out[i], want[log][i], 1e-6) << what << " dx " << i;
        EXPECT_NEAR(*static_cast<const float*>(sink_map), log ? -1.5f : -0.25f, 1e-6) << what << ": the sink's gradient";
        // The same through a batch of one (vksm_batch_item::sink_gradient).
        std::memset(sink_map, 0, 4);
        std::memset(dx_map, 0, 12);
        vksm_batch_item item{};
        item.plan = plan;
        item.input = {y, 0, 12};
        item.output = {dx, 0, 12};
        item.gradient = {dy, 0, 12};
        item.sink_gradient = {sink, 0, 4};
        const VkCommandBuffer batch_cb = begun_command_buffer();
        host_writes_to_shaders(batch_cb);
        ASSERT_EQ(vksm_record_batch(&item, 1, batch_cb, VK_NULL_HANDLE, 0), VKSM_SUCCESS) << vksm_context_last_error(ctx);
        shader_writes_to_host(batch_cb);
        vkEndCommandBuffer(batch_cb);
        submit({batch_cb});
        for (int i = 0; i < 3; ++i) EXPECT_NEAR(out[i], want[log][i], 1e-6) << what << " dx " << i << ", batched";
        EXPECT_NEAR(*static_cast<const float*>(sink_map), log ? -1.5f : -0.25f, 1e-6)
            << what << ": the sink's gradient, batched";
        EXPECT_EQ(vksm_record_backward(plan, cb, {y, 0, 12}, {dy, 0, 12}, {dx, 0, 12}, {VK_NULL_HANDLE, 0, 0},
                                       VK_NULL_HANDLE, 0),
                  VKSM_ERROR_INVALID_ARGUMENT);
        EXPECT_NE(std::string(vksm_context_last_error(ctx)).find("sink gradient"), std::string::npos)
            << vksm_context_last_error(ctx);
        vksm_plan_destroy(plan);
    }
    vksm_context_destroy(ctx);
}

TEST_P(Embed, SaysWhichFeaturesAreMissing) {
    // Neither push descriptors nor a pool: refused, saying what would do.
    vksm_context_desc d = desc();
    d.push_descriptor = 0;
    d.descriptor_pool = VK_NULL_HANDLE;
    vksm_context ctx = nullptr;
    char why[512] = "";
    EXPECT_EQ(vksm_context_create(&d, &ctx, why, sizeof why), VKSM_ERROR_UNSUPPORTED);
    EXPECT_EQ(ctx, nullptr);
    EXPECT_NE(std::string(why).find("VK_KHR_push_descriptor"), std::string::npos) << why;
    EXPECT_NE(std::string(why).find("descriptor pool"), std::string::npos) << why;
    // fp16 was not enabled on this device: a clear error, not a wrong result.
    ASSERT_NO_FATAL_FAILURE(create_context(&ctx));
    vksm_problem p{4, 64, 1, VKSM_F16, 0, 1.0, VKSM_PRECISION_FAST};
    vksm_plan plan = nullptr;
    EXPECT_EQ(vksm_plan_create(ctx, &p, &plan), VKSM_ERROR_UNSUPPORTED);
    EXPECT_NE(std::string(vksm_context_last_error(ctx)).find("storageBuffer16BitAccess"), std::string::npos)
        << vksm_context_last_error(ctx);
    p.dtype = VKSM_BF16;  // bf16 moves as 16-bit integers: the same feature
    EXPECT_EQ(vksm_plan_create(ctx, &p, &plan), VKSM_ERROR_UNSUPPORTED);
    EXPECT_NE(std::string(vksm_context_last_error(ctx)).find("bf16 tensors need storageBuffer16BitAccess"),
              std::string::npos)
        << vksm_context_last_error(ctx);
    vksm_problem bad{4, 64, 1, VKSM_F32, 0, -1.0, VKSM_PRECISION_FAST};
    EXPECT_EQ(vksm_plan_create(ctx, &bad, &plan), VKSM_ERROR_INVALID_ARGUMENT);
    bad = {4, 64, 1, static_cast<vksm_dtype>(3), 0, 1.0, VKSM_PRECISION_FAST};
    EXPECT_EQ(vksm_plan_create(ctx, &bad, &plan), VKSM_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(vksm_context_last_error(ctx)).find("unknown dtype 3"), std::string::npos)
        << vksm_context_last_error(ctx);
    vksm_context_destroy(ctx);
}

TEST_P(Embed, PipelineCacheRoundTrip) {
    vksm_context ctx = nullptr;
    ASSERT_NO_FATAL_FAILURE(create_context(&ctx));
    vksm_problem p{8, 1000, 1, VKSM_F32, 0, 1.0, VKSM_PRECISION_FAST};
    vksm_plan plan = nullptr;
    ASSERT_EQ(vksm_plan_create(ctx, &p, &plan), VKSM_SUCCESS);
    size_t size = 0;
    ASSERT_EQ(vksm_pipeline_cache_data(ctx, nullptr, &size), VKSM_SUCCESS);
    ASSERT_GE(size, 16u) << "a pipeline cache blob starts with its 16+ byte header";
    std::vector<uint8_t> blob(size);
    ASSERT_EQ(vksm_pipeline_cache_data(ctx, blob.data(), &size), VKSM_SUCCESS);
    vksm_plan_destroy(plan);
    vksm_context_destroy(ctx);
    // A second context starts from the blob and plans the same problem.
    vksm_context_desc d = desc();
    d.pipeline_cache_data = blob.data();
    d.pipeline_cache_size = blob.size();
    ASSERT_EQ(vksm_context_create(&d, &ctx, nullptr, 0), VKSM_SUCCESS);
    ASSERT_EQ(vksm_plan_create(ctx, &p, &plan), VKSM_SUCCESS);
    vksm_plan_destroy(plan);
    vksm_context_destroy(ctx);
}

// What a debugger (RenderDoc, Nsight) would be told: the host's
// vkGetInstanceProcAddr is wrapped so that the debug-utils calls vksoftmax
// makes are seen, then passed on to the layer.
struct DebugCalls {
    PFN_vkSetDebugUtilsObjectNameEXT set_name = nullptr;
    PFN_vkCmdBeginDebugUtilsLabelEXT begin = nullptr;
    PFN_vkCmdEndDebugUtilsLabelEXT end = nullptr;
    std::vector<std::string> names, events;  // events: "begin <label>" and "end", in order
};

DebugCalls& debug_calls() {
    static DebugCalls calls;
    return calls;
}

VKAPI_ATTR VkResult VKAPI_CALL seen_set_name(VkDevice device, const VkDebugUtilsObjectNameInfoEXT* info) {
    debug_calls().names.push_back(info->pObjectName ? info->pObjectName : "");
    return debug_calls().set_name(device, info);
}
VKAPI_ATTR void VKAPI_CALL seen_begin(VkCommandBuffer cb, const VkDebugUtilsLabelEXT* label) {
    debug_calls().events.push_back(std::string("begin ") + label->pLabelName);
    debug_calls().begin(cb, label);
}
VKAPI_ATTR void VKAPI_CALL seen_end(VkCommandBuffer cb) {
    debug_calls().events.push_back("end");
    debug_calls().end(cb);
}
VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL watching_get_instance_proc_addr(VkInstance instance, const char* name) {
    PFN_vkVoidFunction real = vkGetInstanceProcAddr(instance, name);
    DebugCalls& calls = debug_calls();
    if (!real) return real;
    if (std::strcmp(name, "vkSetDebugUtilsObjectNameEXT") == 0) {
        calls.set_name = reinterpret_cast<PFN_vkSetDebugUtilsObjectNameEXT>(real);
        return reinterpret_cast<PFN_vkVoidFunction>(&seen_set_name);
    }
    if (std::strcmp(name, "vkCmdBeginDebugUtilsLabelEXT") == 0) {
        calls.begin = reinterpret_cast<PFN_vkCmdBeginDebugUtilsLabelEXT>(real);
        return reinterpret_cast<PFN_vkVoidFunction>(&seen_begin);
    }
    if (std::strcmp(name, "vkCmdEndDebugUtilsLabelEXT") == 0) {
        calls.end = reinterpret_cast<PFN_vkCmdEndDebugUtilsLabelEXT>(real);
        return reinterpret_cast<PFN_vkVoidFunction>(&seen_end);
    }
    return real;
}

TEST_P(Embed, NamesPipelinesAndLabelsRecordedWork) {
    if (!validation_) GTEST_SKIP() << "no validation layer: VK_EXT_debug_utils is not enabled on this instance";
    const vksm_problem split{1, 1u << 20, 1, VKSM_F32, 0, 1.0, VKSM_PRECISION_FAST};
    for (int enabled : {1, 0}) {
        debug_calls() = DebugCalls{};
        vksm_context_desc d = desc();
        d.get_instance_proc_addr = watching_get_instance_proc_addr;
        d.debug_utils = enabled;
        vksm_context ctx = nullptr;
        ASSERT_EQ(vksm_context_create(&d, &ctx, nullptr, 0), VKSM_SUCCESS);
        vksm_plan plan = nullptr;
        ASSERT_EQ(vksm_plan_create(ctx, &split, &plan), VKSM_SUCCESS);
        ASSERT_EQ(vksm_plan_passes(plan), 2u) << "1 x 2^20 is meant to take the split path";
        VkDeviceSize ws = 0, ws_align = 0;
        vksm_plan_workspace(plan, &ws, &ws_align);
        const VkDeviceSize bytes = vksm_plan_tensor_bytes(plan);
        void* map = nullptr;
        const VkBuffer in = buffer(bytes, &map), out = buffer(bytes, &map), work = buffer(ws, &map);
        const VkCommandBuffer cb = begun_command_buffer();
        ASSERT_EQ(vksm_record(plan, cb, {in, 0, bytes}, {out, 0, bytes}, {work, 0, ws}, VK_NULL_HANDLE, 0), VKSM_SUCCESS);
        ASSERT_EQ(vkEndCommandBuffer(cb), VK_SUCCESS);
        const DebugCalls& calls = debug_calls();
        if (enabled) {
            ASSERT_EQ(calls.names.size(), 2u) << "one name per pipeline: split statistics and split normalize";
            EXPECT_NE(calls.names[0].find("vksoftmax softmax pipeline f32/"), std::string::npos) << calls.names[0];
            EXPECT_NE(calls.names[0].find("split statistics"), std::string::npos) << calls.names[0];
            EXPECT_NE(calls.names[1].find("split normalize"), std::string::npos) << calls.names[1];
            ASSERT_EQ(calls.events.size(), 2u) << "one label around the record";
            EXPECT_EQ(calls.events[0], "begin vksoftmax softmax f32 (outer 1, axis 1048576, inner 1) (split)");
            EXPECT_EQ(calls.events[1], "end");
        } else {
            EXPECT_TRUE(calls.names.empty()) << "named " << calls.names.size() << " objects with debug_utils = 0";
            EXPECT_TRUE(calls.events.empty()) << "labelled work with debug_utils = 0";
        }
        vksm_plan_destroy(plan);
        vksm_context_destroy(ctx);
    }
}

INSTANTIATE_TEST_SUITE_P(Descriptors, Embed, ::testing::Values(Descriptors::push, Descriptors::host_pool),
                         descriptors_name);

}  // namespace
