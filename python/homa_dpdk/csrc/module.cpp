// module.cpp: the Python module homa_dpdk._torch_homa: the class
// ProcessGroupHoma (a torch.distributed ProcessGroup) and its creator,
// which homa_dpdk/torch.py registers as the backend "homa".
#include <pybind11/chrono.h>
#include <torch/python.h>

#include "process_group.hpp"

namespace py = pybind11;

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "torch.distributed backend \"homa\" over homa-dpdk's libhoma (a C++ c10d ProcessGroup)";
  // The base class must be known to pybind11 before ours derives from it.
  py::module::import("torch.distributed");
  py::class_<homa_torch::ProcessGroupHoma, homa_torch::HomaBase, c10::intrusive_ptr<homa_torch::ProcessGroupHoma>>(
      m, "ProcessGroupHoma")
      .def("stats", [](const homa_torch::ProcessGroupHoma& pg) {
        py::dict d;
        for (auto& kv : pg.stats()) d[py::str(kv.first)] = kv.second;
        return d;
      })
      .def("shutdown", &homa_torch::ProcessGroupHoma::shutdown, py::call_guard<py::gil_scoped_release>());
  m.def(
      "create",
      [](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::duration<double> timeout) {
        return homa_torch::create(store, rank, size,
                                  std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
      },
      py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
      py::call_guard<py::gil_scoped_release>(),
      "Attaches to this rank's homa-dpdk host, rendezvouses through store and returns the ProcessGroup.");
  m.def("api_version", []() { return homa_api_version(); }, "libhoma's HOMA_API_VERSION");
}
