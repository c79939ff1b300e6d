/* nvml.h: the project's own minimal NVML declarations (types, constants, function pointer types) for dlopen use. */
#pragma once

/*
 * Every layout, value and signature below was copied by hand from NVIDIA's nvml.h as published in
 * github.com/NVIDIA/go-nvml, gen/nvml/nvml.h at commit 2f9e261fe40a7a1c54783d66805e8920564763b4
 * (NVML API version 13). Only what gpunode uses is declared. Never change a layout without checking
 * that header: the real library writes into these structs.
 */

/* nvmlReturn_t (nvml.h "nvmlReturn_enum"). */
typedef enum nvmlReturn_enum {
        NVML_SUCCESS = 0,
        NVML_ERROR_UNINITIALIZED = 1,
        NVML_ERROR_INVALID_ARGUMENT = 2,
        NVML_ERROR_NOT_SUPPORTED = 3,
        NVML_ERROR_NO_PERMISSION = 4,
        NVML_ERROR_ALREADY_INITIALIZED = 5,
        NVML_ERROR_NOT_FOUND = 6,
        NVML_ERROR_INSUFFICIENT_SIZE = 7,
        NVML_ERROR_INSUFFICIENT_POWER = 8,
        NVML_ERROR_DRIVER_NOT_LOADED = 9,
        NVML_ERROR_TIMEOUT = 10,
        NVML_ERROR_IRQ_ISSUE = 11,
        NVML_ERROR_LIBRARY_NOT_FOUND = 12,
        NVML_ERROR_FUNCTION_NOT_FOUND = 13,
        NVML_ERROR_CORRUPTED_INFOROM = 14,
        NVML_ERROR_GPU_IS_LOST = 15,
        NVML_ERROR_RESET_REQUIRED = 16,
        NVML_ERROR_OPERATING_SYSTEM = 17,
        NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
        NVML_ERROR_IN_USE = 19,
        NVML_ERROR_MEMORY = 20,
        NVML_ERROR_NO_DATA = 21,
        NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
        NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
        NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
        NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
        NVML_ERROR_DEPRECATED = 26,
        NVML_ERROR_NOT_READY = 27,
        NVML_ERROR_GPU_NOT_FOUND = 28,
        NVML_ERROR_INVALID_STATE = 29,
        NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
        NVML_ERROR_UNKNOWN = 999,
} nvmlReturn_t;

/* NVML_STRUCT_VERSION(data, ver): sizeof the struct | (ver << 24). */
#define NVML_STRUCT_VERSION(data, ver) (unsigned int)(sizeof(nvml##data##_v##ver##_t) | ((unsigned)(ver) << 24U))

/* nvmlInitWithFlags flags. */
#define NVML_INIT_FLAG_NO_GPUS   (1 << 0)
#define NVML_INIT_FLAG_NO_ATTACH (1 << 1)

/* Buffer sizes. */
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE     32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE  16
#define NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT      "%04X:%02X:%02X.0"
#define NVML_DEVICE_PCI_BUS_ID_FMT             "%08X:%02X:%02X.0"
#define NVML_DEVICE_UUID_BUFFER_SIZE           80
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE        96
#define NVML_DEVICE_NAME_BUFFER_SIZE           64
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE        96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE   80

/* Opaque handles. */
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct nvmlGpuInstance_st *nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st *nvmlComputeInstance_t;

/* nvmlPciInfo_t: the struct taken by nvmlDeviceGetPciInfo_v2 and _v3. */
typedef struct nvmlPciInfo_st {
        char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
        unsigned int domain;
        unsigned int bus;
        unsigned int device;
        unsigned int pciDeviceId; /* 16-bit device id << 16 | 16-bit vendor id */
        unsigned int pciSubSystemId;
        char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

/* nvmlUtilization_t (percent over the last sample period). */
typedef struct nvmlUtilization_st {
        unsigned int gpu;
        unsigned int memory;
} nvmlUtilization_t;

/* nvmlMemory_t (v1): note free comes before used. */
typedef struct nvmlMemory_st {
        unsigned long long total;
        unsigned long long free;
        unsigned long long used;
} nvmlMemory_t;

/* nvmlMemory_v2_t: version must be nvmlMemory_v2. */
typedef struct nvmlMemory_v2_st {
        unsigned int version;
        unsigned long long total;
        unsigned long long reserved;
        unsigned long long free;
        unsigned long long used;
} nvmlMemory_v2_t;
#define nvmlMemory_v2 NVML_STRUCT_VERSION(Memory, 2)

/* nvmlEnableState_t. */
typedef enum nvmlEnableState_enum {
        NVML_FEATURE_DISABLED = 0,
        NVML_FEATURE_ENABLED = 1,
} nvmlEnableState_t;

/* nvmlTemperatureSensors_t. */
typedef enum nvmlTemperatureSensors_enum {
        NVML_TEMPERATURE_GPU = 0,
        NVML_TEMPERATURE_COUNT,
} nvmlTemperatureSensors_t;

/* nvmlTemperature_v1_t, taken by nvmlDeviceGetTemperatureV. */
typedef struct {
        unsigned int version;
        nvmlTemperatureSensors_t sensorType;
        int temperature;
} nvmlTemperature_v1_t;
typedef nvmlTemperature_v1_t nvmlTemperature_t;
#define nvmlTemperature_v1 NVML_STRUCT_VERSION(Temperature, 1)

/* nvmlMemoryErrorType_t. */
typedef enum nvmlMemoryErrorType_enum {
        NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
        NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1,
        NVML_MEMORY_ERROR_TYPE_COUNT,
} nvmlMemoryErrorType_t;

/* nvmlEccCounterType_t. */
typedef enum nvmlEccCounterType_enum {
        NVML_VOLATILE_ECC = 0,
        NVML_AGGREGATE_ECC = 1,
        NVML_ECC_COUNTER_TYPE_COUNT,
} nvmlEccCounterType_t;

/* nvmlClockType_t. */
typedef enum nvmlClockType_enum {
        NVML_CLOCK_GRAPHICS = 0,
        NVML_CLOCK_SM = 1,
        NVML_CLOCK_MEM = 2,
        NVML_CLOCK_VIDEO = 3,
        NVML_CLOCK_COUNT,
} nvmlClockType_t;

/* MIG modes (nvmlDeviceGetMigMode). */
#define NVML_DEVICE_MIG_DISABLE 0x0
#define NVML_DEVICE_MIG_ENABLE  0x1

/* nvmlDeviceAttributes_t: nvmlDeviceGetAttributes(_v2) on a MIG device handle. */
typedef struct nvmlDeviceAttributes_st {
        unsigned int multiprocessorCount;
        unsigned int sharedCopyEngineCount;
        unsigned int sharedDecoderCount;
        unsigned int sharedEncoderCount;
        unsigned int sharedJpegCount;
        unsigned int sharedOfaCount;
        unsigned int gpuInstanceSliceCount;
        unsigned int computeInstanceSliceCount;
        unsigned long long memorySizeMB; /* MiB */
} nvmlDeviceAttributes_t;

/* GPU instance profiles: the `profile` argument of nvmlDeviceGetGpuInstanceProfileInfo (an index,
 * not the profile id the call answers). */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE        0x0
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE        0x1
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE        0x2
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE        0x3
#define NVML_GPU_INSTANCE_PROFILE_7_SLICE        0x4
#define NVML_GPU_INSTANCE_PROFILE_8_SLICE        0x5
#define NVML_GPU_INSTANCE_PROFILE_6_SLICE        0x6
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1   0x7
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1   0x8
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2   0x9
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX    0x0A
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX    0x0B
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX    0x0C
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME  0x0D
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME  0x0E
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME 0x0F
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME 0x10
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX    0x11
#define NVML_GPU_INSTANCE_PROFILE_COUNT          0x12

/* Compute instance profiles and engine profiles (nvmlGpuInstanceGetComputeInstanceProfileInfo). */
#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE       0x0
#define NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE       0x1
#define NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE       0x2
#define NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE       0x3
#define NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE       0x4
#define NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE       0x5
#define NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE       0x6
#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1  0x7
#define NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE_NVL   0x8
#define NVML_COMPUTE_INSTANCE_PROFILE_COUNT         0x9
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0x0
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT  0x1

typedef struct nvmlGpuInstancePlacement_st {
        unsigned int start;
        unsigned int size;
} nvmlGpuInstancePlacement_t;

/* nvmlGpuInstanceProfileInfo_t (v1, no version field): nvmlDeviceGetGpuInstanceProfileInfo. */
typedef struct nvmlGpuInstanceProfileInfo_st {
        unsigned int id; /* unique profile id within the device */
        unsigned int isP2pSupported;
        unsigned int sliceCount;
        unsigned int instanceCount;
        unsigned int multiprocessorCount;
        unsigned int copyEngineCount;
        unsigned int decoderCount;
        unsigned int encoderCount;
        unsigned int jpegCount;
        unsigned int ofaCount;
        unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;

/* nvmlGpuInstanceInfo_t: nvmlGpuInstanceGetInfo. */
typedef struct nvmlGpuInstanceInfo_st {
        nvmlDevice_t device;
        unsigned int id;
        unsigned int profileId;
        nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct nvmlComputeInstancePlacement_st {
        unsigned int start;
        unsigned int size;
} nvmlComputeInstancePlacement_t;

/* nvmlComputeInstanceProfileInfo_t (v1, no version field): nvmlGpuInstanceGetComputeInstanceProfileInfo. */
typedef struct nvmlComputeInstanceProfileInfo_st {
        unsigned int id; /* unique profile id within the GPU instance */
        unsigned int sliceCount;
        unsigned int instanceCount;
        unsigned int multiprocessorCount;
        unsigned int sharedCopyEngineCount;
        unsigned int sharedDecoderCount;
        unsigned int sharedEncoderCount;
        unsigned int sharedJpegCount;
        unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

/* nvmlComputeInstanceInfo_t: nvmlComputeInstanceGetInfo(_v2). */
typedef struct nvmlComputeInstanceInfo_st {
        nvmlDevice_t device;
        nvmlGpuInstance_t gpuInstance;
        unsigned int id;
        unsigned int profileId;
        nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

/* Fabric (nvmlDeviceGetGpuFabricInfo*). */
#define NVML_GPU_FABRIC_UUID_LEN            16
#define NVML_GPU_FABRIC_STATE_NOT_SUPPORTED 0
#define NVML_GPU_FABRIC_STATE_NOT_STARTED   1
#define NVML_GPU_FABRIC_STATE_IN_PROGRESS   2
#define NVML_GPU_FABRIC_STATE_COMPLETED     3
typedef unsigned char nvmlGpuFabricState_t;

/* nvmlGpuFabricInfo_t (v1, no version field): taken by the deprecated nvmlDeviceGetGpuFabricInfo. */
typedef struct {
        unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
        nvmlReturn_t status;
        unsigned int cliqueId;
        nvmlGpuFabricState_t state;
} nvmlGpuFabricInfo_t;

/* nvmlGpuFabricInfo_v2_t: v1 with a leading version and a trailing healthMask. */
typedef struct {
        unsigned int version;
        unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
        nvmlReturn_t status;
        unsigned int cliqueId;
        nvmlGpuFabricState_t state;
        unsigned int healthMask;
} nvmlGpuFabricInfo_v2_t;
#define nvmlGpuFabricInfo_v2 NVML_STRUCT_VERSION(GpuFabricInfo, 2)

/* nvmlGpuFabricInfo_v3_t: v2 plus healthSummary. nvml.h (API 13) typedefs nvmlGpuFabricInfoV_t to
 * this; older drivers accept only nvmlGpuFabricInfo_v2 in nvmlDeviceGetGpuFabricInfoV (they answer
 * NVML_ERROR_ARGUMENT_VERSION_MISMATCH to v3), and v3 is a prefix-compatible superset of v2. */
typedef struct {
        unsigned int version;
        unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
        nvmlReturn_t status;
        unsigned int cliqueId;
        nvmlGpuFabricState_t state;
        unsigned int healthMask;
        unsigned char healthSummary;
} nvmlGpuFabricInfo_v3_t;
typedef nvmlGpuFabricInfo_v3_t nvmlGpuFabricInfoV_t;
#define nvmlGpuFabricInfo_v3 NVML_STRUCT_VERSION(GpuFabricInfo, 3)

/* nvmlValueType_t and nvmlValue_t (field values). */
typedef enum nvmlValueType_enum {
        NVML_VALUE_TYPE_DOUBLE = 0,
        NVML_VALUE_TYPE_UNSIGNED_INT = 1,
        NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
        NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
        NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
        NVML_VALUE_TYPE_SIGNED_INT = 5,
        NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
        NVML_VALUE_TYPE_COUNT,
} nvmlValueType_t;

typedef union nvmlValue_st {
        double dVal;
        int siVal;
        unsigned int uiVal;
        unsigned long ulVal;
        unsigned long long ullVal;
        signed long long sllVal;
        unsigned short usVal;
} nvmlValue_t;

/* nvmlFieldValue_t: fieldId (and scopeId) are inputs, the rest outputs. */
typedef struct nvmlFieldValue_st {
        unsigned int fieldId;
        unsigned int scopeId;
        long long timestamp;
        long long latencyUsec;
        nvmlValueType_t valueType;
        nvmlReturn_t nvmlReturn;
        nvmlValue_t value;
} nvmlFieldValue_t;

/* Field ids (NVML_FI_*) gpunode and its exporter read. */
#define NVML_FI_DEV_ECC_SBE_VOL_TOTAL                 3
#define NVML_FI_DEV_ECC_DBE_VOL_TOTAL                 4
#define NVML_FI_DEV_ECC_SBE_AGG_TOTAL                 5
#define NVML_FI_DEV_ECC_DBE_AGG_TOTAL                 6
#define NVML_FI_DEV_RETIRED_SBE                       29
#define NVML_FI_DEV_RETIRED_DBE                       30
#define NVML_FI_DEV_RETIRED_PENDING                   31
#define NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL 38
#define NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL 45
#define NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL   52
#define NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL 59
#define NVML_FI_DEV_NVLINK_BANDWIDTH_C0_TOTAL         66
#define NVML_FI_DEV_MEMORY_TEMP                       82
#define NVML_FI_DEV_NVLINK_LINK_COUNT                 91
#define NVML_FI_DEV_PCIE_REPLAY_COUNTER               94
#define NVML_FI_DEV_REMAPPED_COR                      142
#define NVML_FI_DEV_REMAPPED_UNC                      143
#define NVML_FI_DEV_REMAPPED_PENDING                  144
#define NVML_FI_DEV_REMAPPED_FAILURE                  145
#define NVML_FI_DEV_PCIE_COUNT_CORRECTABLE_ERRORS     173
#define NVML_FI_DEV_POWER_INSTANT                     186
#define NVML_FI_DEV_ENERGY                            191
#define NVML_FI_DEV_GET_GPU_RECOVERY_ACTION           230

/* nvmlDeviceGpuRecoveryAction_t: the value of field 230. */
typedef enum nvmlDeviceGpuRecoveryAction_s {
        NVML_GPU_RECOVERY_ACTION_NONE = 0,
        NVML_GPU_RECOVERY_ACTION_GPU_RESET = 1,
        NVML_GPU_RECOVERY_ACTION_NODE_REBOOT = 2,
        NVML_GPU_RECOVERY_ACTION_DRAIN_P2P = 3,
        NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET = 4,
        NVML_GPU_RECOVERY_ACTION_RECOVER_IMEX_DOMAIN = 5,
} nvmlDeviceGpuRecoveryAction_t;

/* Event types (nvmlDeviceRegisterEvents, nvmlEventData_t.eventType). */
#define nvmlEventTypeNone                   0x0000000000000000LL
#define nvmlEventTypeSingleBitEccError      0x0000000000000001LL
#define nvmlEventTypeDoubleBitEccError      0x0000000000000002LL
#define nvmlEventTypePState                 0x0000000000000004LL
#define nvmlEventTypeXidCriticalError       0x0000000000000008LL
#define nvmlEventTypeClock                  0x0000000000000010LL
#define nvmlEventTypePowerSourceChange      0x0000000000000080LL
#define nvmlEventMigConfigChange            0x0000000000000100LL
#define nvmlEventTypeSingleBitEccErrorStorm 0x0000000000000200LL
#define nvmlEventTypeDramRetirementEvent    0x0000000000000400LL
#define nvmlEventTypeDramRetirementFailure  0x0000000000000800LL
#define nvmlEventTypeNonFatalPoisonError    0x0000000000001000LL
#define nvmlEventTypeFatalPoisonError       0x0000000000002000LL
#define nvmlEventTypeGpuUnavailableError    0x0000000000004000LL
#define nvmlEventTypeGpuRecoveryAction      0x0000000000008000LL

/* nvmlEventData_t: eventData is the Xid for nvmlEventTypeXidCriticalError (999 = unknown). */
typedef struct nvmlEventData_st {
        nvmlDevice_t device;
        unsigned long long eventType;
        unsigned long long eventData;
        unsigned int gpuInstanceId;
        unsigned int computeInstanceId;
} nvmlEventData_t;

/* Clocks event (formerly throttle) reasons, a bit mask. */
#define nvmlClocksEventReasonGpuIdle                   0x0000000000000001LL
#define nvmlClocksEventReasonApplicationsClocksSetting 0x0000000000000002LL
#define nvmlClocksEventReasonSwPowerCap                0x0000000000000004LL
#define nvmlClocksThrottleReasonHwSlowdown             0x0000000000000008LL
#define nvmlClocksEventReasonSyncBoost                 0x0000000000000010LL
#define nvmlClocksEventReasonSwThermalSlowdown         0x0000000000000020LL
#define nvmlClocksThrottleReasonHwThermalSlowdown      0x0000000000000040LL
#define nvmlClocksThrottleReasonHwPowerBrakeSlowdown   0x0000000000000080LL
#define nvmlClocksEventReasonDisplayClockSetting       0x0000000000000100LL
#define nvmlClocksEventReasonNone                      0x0000000000000000LL

/* nvmlPcieUtilCounter_t: nvmlDeviceGetPcieThroughput's counter (KB/s over 20 ms, 1 KB granularity). */
typedef enum nvmlPcieUtilCounter_enum {
        NVML_PCIE_UTIL_TX_BYTES = 0,
        NVML_PCIE_UTIL_RX_BYTES = 1,
        NVML_PCIE_UTIL_COUNT,
} nvmlPcieUtilCounter_t;

/* GPM (GPU performance monitoring, Hopper and later): metric ids gpunode reads (nvmlGpmMetricId_t). */
#define NVML_GPM_METRIC_GRAPHICS_UTIL   1   /* percent of time any compute/graphics app was active, 0..100 */
#define NVML_GPM_METRIC_ANY_TENSOR_UTIL 5   /* percent of time the SMs did any tensor operation, 0..100 */
#define NVML_GPM_METRIC_DRAM_BW_UTIL    10  /* percent of DRAM bandwidth used vs theoretical maximum, 0..100 */
#define NVML_GPM_METRIC_PCIE_TX_PER_SEC 20  /* PCIe traffic from this GPU, MiB/s */
#define NVML_GPM_METRIC_PCIE_RX_PER_SEC 21  /* PCIe traffic to this GPU, MiB/s */
#define NVML_GPM_METRIC_MAX             333 /* the API 13 header's bound: sizes nvmlGpmMetricsGet_t.metrics */

/* An opaque sample buffer (nvmlGpmSampleAlloc / nvmlGpmSampleFree). */
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

/* nvmlGpmMetric_t: metricId in; nvmlReturn, value and metricInfo out. */
typedef struct {
        unsigned int metricId;
        nvmlReturn_t nvmlReturn;
        double value;
        struct {
                char *shortName;
                char *longName;
                char *unit;
        } metricInfo;
} nvmlGpmMetric_t;

/* nvmlGpmMetricsGet_t: version NVML_GPM_METRICS_GET_VERSION; numMetrics entries of metrics[] are used. */
typedef struct {
        unsigned int version;
        unsigned int numMetrics;
        nvmlGpmSample_t sample1;
        nvmlGpmSample_t sample2;
        nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;
#define NVML_GPM_METRICS_GET_VERSION 1

/* nvmlGpmSupport_t: nvmlGpmQueryDeviceSupport; version NVML_GPM_SUPPORT_VERSION. */
typedef struct {
        unsigned int version;
        unsigned int isSupportedDevice;
} nvmlGpmSupport_t;
#define NVML_GPM_SUPPORT_VERSION 1

/* ---- health queries (nvml_health_probe.c): clocks, temperature thresholds, NVLink, PCIe, retired
 * pages, processes, drain state ---- */

/* nvmlPerfPolicyType_t: nvmlDeviceGetViolationStatus's policy. */
typedef enum nvmlPerfPolicyType_enum {
        NVML_PERF_POLICY_POWER = 0,   /* time power violations held the GPU below application clocks */
        NVML_PERF_POLICY_THERMAL = 1, /* time thermal violations did */
        NVML_PERF_POLICY_SYNC_BOOST = 2,
        NVML_PERF_POLICY_BOARD_LIMIT = 3,
        NVML_PERF_POLICY_LOW_UTILIZATION = 4,
        NVML_PERF_POLICY_RELIABILITY = 5,
        NVML_PERF_POLICY_TOTAL_APP_CLOCKS = 10,
        NVML_PERF_POLICY_TOTAL_BASE_CLOCKS = 11,
        NVML_PERF_POLICY_COUNT,
} nvmlPerfPolicyType_t;

/* nvmlViolationTime_t: referenceTime is a CPU timestamp in microseconds, violationTime nanoseconds. */
typedef struct nvmlViolationTime_st {
        unsigned long long referenceTime;
        unsigned long long violationTime;
} nvmlViolationTime_t;

/* nvmlTemperatureThresholds_t: nvmlDeviceGetTemperatureThreshold's threshold. */
typedef enum nvmlTemperatureThresholds_enum {
        NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0, /* the GPU shuts down for hardware protection */
        NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1, /* hardware slowdown begins */
        NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 2,  /* memory temperature where software slowdown begins */
        NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3,  /* GPU temperature where clocks may drop below base */
        NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MIN = 4,
        NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_CURR = 5,
        NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MAX = 6,
        NVML_TEMPERATURE_THRESHOLD_GPS_CURR = 7,
        NVML_TEMPERATURE_THRESHOLD_COUNT,
} nvmlTemperatureThresholds_t;

/* NVLink: the most links a GPU has (API 13; Hopper has 18, Ampere 12) and the error counters. */
#define NVML_NVLINK_MAX_LINKS 36
typedef enum nvmlNvLinkErrorCounter_enum {
        NVML_NVLINK_ERROR_DL_REPLAY = 0,   /* data link transmit replays */
        NVML_NVLINK_ERROR_DL_RECOVERY = 1, /* data link transmit recoveries */
        NVML_NVLINK_ERROR_DL_CRC_FLIT = 2, /* receive flow control digit CRC errors */
        NVML_NVLINK_ERROR_DL_CRC_DATA = 3, /* receive data CRC errors */
        NVML_NVLINK_ERROR_DL_ECC_DATA = 4,
        NVML_NVLINK_ERROR_COUNT,
} nvmlNvLinkErrorCounter_t;

/* nvmlPageRetirementCause_t: nvmlDeviceGetRetiredPages's cause. */
typedef enum nvmlPageRetirementCause_enum {
        NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
        NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1,
        NVML_PAGE_RETIREMENT_CAUSE_COUNT,
} nvmlPageRetirementCause_t;

/* nvmlProcessInfo_t (nvmlProcessInfo_v2_t): taken by nvmlDeviceGet{Compute,Graphics}RunningProcesses _v2
 * and _v3. gpuInstanceId/computeInstanceId are 0xFFFFFFFF outside MIG mode; usedGpuMemory is
 * NVML_VALUE_NOT_AVAILABLE (all ones) when the driver cannot tell. */
typedef struct nvmlProcessInfo_v2_st {
        unsigned int pid;
        unsigned long long usedGpuMemory; /* bytes */
        unsigned int gpuInstanceId;
        unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;
typedef nvmlProcessInfo_v2_t nvmlProcessInfo_t;
#define NVML_VALUE_NOT_AVAILABLE (-1)

/* Function pointer types, one per NVML entry point gpunode resolves (signatures from nvml.h). */
typedef nvmlReturn_t (*nvmlInit_fn)(void);
typedef nvmlReturn_t (*nvmlInitWithFlags_fn)(unsigned int flags);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char *(*nvmlErrorString_fn)(nvmlReturn_t result);
typedef nvmlReturn_t (*nvmlSystemGetDriverVersion_fn)(char *version, unsigned int length);
typedef nvmlReturn_t (*nvmlSystemGetNVMLVersion_fn)(char *version, unsigned int length);
typedef nvmlReturn_t (*nvmlSystemGetCudaDriverVersion_fn)(int *cudaDriverVersion);
typedef nvmlReturn_t (*nvmlDeviceGetCount_fn)(unsigned int *deviceCount);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_fn)(unsigned int index, nvmlDevice_t *device);
typedef nvmlReturn_t (*nvmlDeviceGetName_fn)(nvmlDevice_t device, char *name, unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetUUID_fn)(nvmlDevice_t device, char *uuid, unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetIndex_fn)(nvmlDevice_t device, unsigned int *index);
typedef nvmlReturn_t (*nvmlDeviceGetMinorNumber_fn)(nvmlDevice_t device, unsigned int *minorNumber);
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_fn)(nvmlDevice_t device, nvmlPciInfo_t *pci);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_fn)(nvmlDevice_t device, nvmlMemory_t *memory);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_v2_fn)(nvmlDevice_t device, nvmlMemory_v2_t *memory);
typedef nvmlReturn_t (*nvmlDeviceGetCudaComputeCapability_fn)(nvmlDevice_t device, int *major, int *minor);
typedef nvmlReturn_t (*nvmlDeviceGetMigMode_fn)(nvmlDevice_t device, unsigned int *currentMode,
                                                unsigned int *pendingMode);
typedef nvmlReturn_t (*nvmlDeviceGetMaxMigDeviceCount_fn)(nvmlDevice_t device, unsigned int *count);
typedef nvmlReturn_t (*nvmlDeviceGetMigDeviceHandleByIndex_fn)(nvmlDevice_t device, unsigned int index,
                                                               nvmlDevice_t *migDevice);
typedef nvmlReturn_t (*nvmlDeviceGetDeviceHandleFromMigDeviceHandle_fn)(nvmlDevice_t migDevice, nvmlDevice_t *device);
typedef nvmlReturn_t (*nvmlDeviceGetGpuInstanceId_fn)(nvmlDevice_t device, unsigned int *id);
typedef nvmlReturn_t (*nvmlDeviceGetComputeInstanceId_fn)(nvmlDevice_t device, unsigned int *id);
typedef nvmlReturn_t (*nvmlDeviceGetAttributes_fn)(nvmlDevice_t device, nvmlDeviceAttributes_t *attributes);
typedef nvmlReturn_t (*nvmlDeviceGetGpuInstanceProfileInfo_fn)(nvmlDevice_t device, unsigned int profile,
                                                               nvmlGpuInstanceProfileInfo_t *info);
typedef nvmlReturn_t (*nvmlDeviceGetGpuInstanceById_fn)(nvmlDevice_t device, unsigned int id,
                                                        nvmlGpuInstance_t *gpuInstance);
typedef nvmlReturn_t (*nvmlGpuInstanceGetInfo_fn)(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info);
typedef nvmlReturn_t (*nvmlGpuInstanceGetComputeInstanceProfileInfo_fn)(nvmlGpuInstance_t gpuInstance,
                                                                        unsigned int profile, unsigned int engProfile,
                                                                        nvmlComputeInstanceProfileInfo_t *info);
typedef nvmlReturn_t (*nvmlGpuInstanceGetComputeInstanceById_fn)(nvmlGpuInstance_t gpuInstance, unsigned int id,
                                                                 nvmlComputeInstance_t *computeInstance);
typedef nvmlReturn_t (*nvmlComputeInstanceGetInfo_fn)(nvmlComputeInstance_t computeInstance,
                                                      nvmlComputeInstanceInfo_t *info);
typedef nvmlReturn_t (*nvmlDeviceGetPersistenceMode_fn)(nvmlDevice_t device, nvmlEnableState_t *mode);
typedef nvmlReturn_t (*nvmlDeviceGetGpuFabricInfo_fn)(nvmlDevice_t device, nvmlGpuFabricInfo_t *gpuFabricInfo);
typedef nvmlReturn_t (*nvmlDeviceGetGpuFabricInfoV_fn)(nvmlDevice_t device, nvmlGpuFabricInfoV_t *gpuFabricInfo);
typedef nvmlReturn_t (*nvmlDeviceGetEccMode_fn)(nvmlDevice_t device, nvmlEnableState_t *current,
                                                nvmlEnableState_t *pending);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEccErrors_fn)(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                                       nvmlEccCounterType_t counterType, unsigned long long *eccCounts);
typedef nvmlReturn_t (*nvmlDeviceGetRemappedRows_fn)(nvmlDevice_t device, unsigned int *corrRows, unsigned int *uncRows,
                                                     unsigned int *isPending, unsigned int *failureOccurred);
typedef nvmlReturn_t (*nvmlDeviceGetFieldValues_fn)(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values);
typedef nvmlReturn_t (*nvmlDeviceGetTemperature_fn)(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                                    unsigned int *temp);
typedef nvmlReturn_t (*nvmlDeviceGetTemperatureV_fn)(nvmlDevice_t device, nvmlTemperature_t *temperature);
typedef nvmlReturn_t (*nvmlDeviceGetPowerUsage_fn)(nvmlDevice_t device, unsigned int *power);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEnergyConsumption_fn)(nvmlDevice_t device, unsigned long long *energy);
typedef nvmlReturn_t (*nvmlDeviceGetUtilizationRates_fn)(nvmlDevice_t device, nvmlUtilization_t *utilization);
typedef nvmlReturn_t (*nvmlDeviceGetClockInfo_fn)(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock);
typedef nvmlReturn_t (*nvmlDeviceGetPcieReplayCounter_fn)(nvmlDevice_t device, unsigned int *value);
typedef nvmlReturn_t (*nvmlDeviceGetCurrentClocksEventReasons_fn)(nvmlDevice_t device,
                                                                  unsigned long long *clocksEventReasons);
typedef nvmlReturn_t (*nvmlDeviceGetEncoderUtilization_fn)(nvmlDevice_t device, unsigned int *utilization,
                                                           unsigned int *samplingPeriodUs);
typedef nvmlReturn_t (*nvmlDeviceGetDecoderUtilization_fn)(nvmlDevice_t device, unsigned int *utilization,
                                                           unsigned int *samplingPeriodUs);
typedef nvmlReturn_t (*nvmlDeviceGetPcieThroughput_fn)(nvmlDevice_t device, nvmlPcieUtilCounter_t counter,
                                                       unsigned int *value);
typedef nvmlReturn_t (*nvmlGpmQueryDeviceSupport_fn)(nvmlDevice_t device, nvmlGpmSupport_t *gpmSupport);
typedef nvmlReturn_t (*nvmlGpmSampleAlloc_fn)(nvmlGpmSample_t *gpmSample);
typedef nvmlReturn_t (*nvmlGpmSampleFree_fn)(nvmlGpmSample_t gpmSample);
typedef nvmlReturn_t (*nvmlGpmSampleGet_fn)(nvmlDevice_t device, nvmlGpmSample_t gpmSample);
typedef nvmlReturn_t (*nvmlGpmMigSampleGet_fn)(nvmlDevice_t device, unsigned int gpuInstanceId,
                                               nvmlGpmSample_t gpmSample);
typedef nvmlReturn_t (*nvmlGpmMetricsGet_fn)(nvmlGpmMetricsGet_t *metricsGet);
typedef nvmlReturn_t (*nvmlDeviceGetViolationStatus_fn)(nvmlDevice_t device, nvmlPerfPolicyType_t perfPolicyType,
                                                        nvmlViolationTime_t *violTime);
typedef nvmlReturn_t (*nvmlDeviceGetTemperatureThreshold_fn)(nvmlDevice_t device,
                                                             nvmlTemperatureThresholds_t thresholdType,
                                                             unsigned int *temp);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkState_fn)(nvmlDevice_t device, unsigned int link,
                                                    nvmlEnableState_t *isActive);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkErrorCounter_fn)(nvmlDevice_t device, unsigned int link,
                                                           nvmlNvLinkErrorCounter_t counter,
                                                           unsigned long long *counterValue);
typedef nvmlReturn_t (*nvmlDeviceGetPcieLink_fn)(nvmlDevice_t device,
                                                 unsigned int *value); /* Curr/Max Width/Generation */
typedef nvmlReturn_t (*nvmlDeviceGetRetiredPages_fn)(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                                     unsigned int *pageCount, unsigned long long *addresses);
typedef nvmlReturn_t (*nvmlDeviceGetRetiredPagesPendingStatus_fn)(nvmlDevice_t device, nvmlEnableState_t *isPending);
typedef nvmlReturn_t (*nvmlDeviceGetRunningProcesses_fn)(nvmlDevice_t device, unsigned int *infoCount,
                                                         nvmlProcessInfo_t *infos); /* Compute/Graphics, _v3/_v2 */
typedef nvmlReturn_t (*nvmlDeviceQueryDrainState_fn)(nvmlPciInfo_t *pciInfo, nvmlEnableState_t *currentState);
typedef nvmlReturn_t (*nvmlEventSetCreate_fn)(nvmlEventSet_t *set);
typedef nvmlReturn_t (*nvmlDeviceRegisterEvents_fn)(nvmlDevice_t device, unsigned long long eventTypes,
                                                    nvmlEventSet_t set);
typedef nvmlReturn_t (*nvmlDeviceGetSupportedEventTypes_fn)(nvmlDevice_t device, unsigned long long *eventTypes);
typedef nvmlReturn_t (*nvmlEventSetWait_fn)(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms);
typedef nvmlReturn_t (*nvmlEventSetFree_fn)(nvmlEventSet_t set);

/* Layout checks: sizes and offsets measured by compiling NVIDIA's nvml.h (go-nvml commit above) on
 * x86_64; a mismatch here means a declaration above drifted from the real header. */
#if defined(__LP64__)
#include <stddef.h>
_Static_assert(sizeof(nvmlPciInfo_t) == 68 && offsetof(nvmlPciInfo_t, busId) == 36, "nvmlPciInfo_t layout");
_Static_assert(sizeof(nvmlMemory_t) == 24 && offsetof(nvmlMemory_t, used) == 16, "nvmlMemory_t layout");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40 && offsetof(nvmlMemory_v2_t, used) == 32, "nvmlMemory_v2_t layout");
_Static_assert(sizeof(nvmlTemperature_t) == 12, "nvmlTemperature_t layout");
_Static_assert(sizeof(nvmlGpuFabricInfo_t) == 28 && offsetof(nvmlGpuFabricInfo_t, state) == 24,
               "nvmlGpuFabricInfo_t layout");
_Static_assert(sizeof(nvmlGpuFabricInfo_v2_t) == 36 && offsetof(nvmlGpuFabricInfo_v2_t, healthMask) == 32,
               "nvmlGpuFabricInfo_v2_t layout");
_Static_assert(sizeof(nvmlGpuFabricInfo_v3_t) == 40 && offsetof(nvmlGpuFabricInfo_v3_t, healthSummary) == 36,
               "nvmlGpuFabricInfo_v3_t layout");
_Static_assert(sizeof(nvmlFieldValue_t) == 40 && offsetof(nvmlFieldValue_t, value) == 32, "nvmlFieldValue_t layout");
_Static_assert(sizeof(nvmlDeviceAttributes_t) == 40 && offsetof(nvmlDeviceAttributes_t, memorySizeMB) == 32,
               "nvmlDeviceAttributes_t layout");
_Static_assert(sizeof(nvmlGpuInstanceProfileInfo_t) == 48 && offsetof(nvmlGpuInstanceProfileInfo_t, memorySizeMB) == 40,
               "nvmlGpuInstanceProfileInfo_t layout");
_Static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24 && offsetof(nvmlGpuInstanceInfo_t, profileId) == 12,
               "nvmlGpuInstanceInfo_t layout");
_Static_assert(sizeof(nvmlComputeInstanceProfileInfo_t) == 36, "nvmlComputeInstanceProfileInfo_t layout");
_Static_assert(sizeof(nvmlComputeInstanceInfo_t) == 32 && offsetof(nvmlComputeInstanceInfo_t, profileId) == 20,
               "nvmlComputeInstanceInfo_t layout");
_Static_assert(sizeof(nvmlEventData_t) == 32 && offsetof(nvmlEventData_t, eventData) == 16, "nvmlEventData_t layout");
_Static_assert(sizeof(nvmlGpmMetric_t) == 40 && offsetof(nvmlGpmMetric_t, value) == 8 &&
                       offsetof(nvmlGpmMetric_t, metricInfo) == 16,
               "nvmlGpmMetric_t layout");
_Static_assert(sizeof(nvmlGpmMetricsGet_t) == 13344 && offsetof(nvmlGpmMetricsGet_t, sample2) == 16 &&
                       offsetof(nvmlGpmMetricsGet_t, metrics) == 24,
               "nvmlGpmMetricsGet_t layout");
_Static_assert(sizeof(nvmlGpmSupport_t) == 8, "nvmlGpmSupport_t layout");
_Static_assert(sizeof(nvmlViolationTime_t) == 16, "nvmlViolationTime_t layout");
_Static_assert(sizeof(nvmlProcessInfo_t) == 24 && offsetof(nvmlProcessInfo_t, usedGpuMemory) == 8 &&
                       offsetof(nvmlProcessInfo_t, computeInstanceId) == 20,
               "nvmlProcessInfo_t layout");
#endif
