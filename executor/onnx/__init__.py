"""The onnx executor and ONNX export: a call's planned IR written as an ONNX graph
(executor/onnx/tracing.py) and run by onnxruntime (executor/onnx/executor.py)."""
