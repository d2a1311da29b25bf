"""The console side of the storage benchmarks (engines/storage): run a kind in a spawned worker with progress
(`launch`), keep its outcome as a history run (`runs`), and read stored ones back for compare and reports
(`figures`). Qt-free: the CLI and the window share it; no module here imports a kind itself."""
