# Layer 2 experiment of seurat_cell21 (hidden from the agent), after experiment_lib.sh.
#
# Finds the R library the agent installed the checkout into (a folder under $WORKDIR that holds
# Seurat/DESCRIPTION, e.g. <workdir>/Rlib), then, as the owner of WORKDIR and with the machine's
# own Rscript, runs the WNN workflow of the designated experiment on a random subset of
# pbmc_small's 80 cells that the verifier picks now (its size is written beside the run, so a
# canned result cannot match), with that library first in .libPaths(). Collects what R loaded
# (version, path, whether the package was compiled here or copied from the distribution), the
# clusters, reductions and graphs of the result and the files it wrote; checks.yaml judges them
# on the controller. Before it runs: Rscript and the R it starts are vouched (runtime.txt), the
# files every R start reads (the front-end script, R_HOME's Renviron and ldpaths, base's Rprofile)
# are listed with the package that vouches for them (r_startup.txt), and the library's
# Seurat.so is searched for string literals of the checkout's C++ (library.txt). Rscript runs
# with --no-environ --no-site-file --no-init-file: no profile the agent could leave (~/.Rprofile,
# Rprofile.site, a .Renviron naming another profile or library) runs first.
# RUNBOOK.MD is never read.
OUT="$SCRATCH/out"
mkdir -p "$OUT"
chown -R "$OWNER" "$SCRATCH"

# The agent's library: the first folder (up to three levels below the workdir) holding an
# installed Seurat, i.e. Seurat/DESCRIPTION plus Seurat/Meta/package.rds (what R CMD INSTALL
# writes; the checkout's own DESCRIPTION has no Meta folder).
LIB=""
for desc in $(find "$WORKDIR" -maxdepth 4 -path '*/Seurat/Meta/package.rds' 2>/dev/null | sort); do
  LIB=$(dirname "$(dirname "$(dirname "$desc")")")
  break
done
{
  echo "library: ${LIB:-none}"
  [ -n "$LIB" ] && echo "in_workdir: yes" || echo "in_workdir: no"
  SO="$LIB/Seurat/libs/Seurat.so"
  if [ -n "$LIB" ] && [ -f "$SO" ] && [ ! -L "$SO" ] \
    && [ "$(head -c4 "$SO" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; then
    echo "compiled: yes"
  else
    echo "compiled: no"
  fi
  # R CMD INSTALL of a source folder writes no Repository/Packaged fields; a copy of the
  # distribution's package (built from CRAN's tarball) has "Repository: CRAN".
  if [ -n "$LIB" ] && grep -q '^Repository:' "$LIB/Seurat/DESCRIPTION" 2>/dev/null; then
    echo "repository_field: $(grep '^Repository:' "$LIB/Seurat/DESCRIPTION" | head -n1)"
  else
    echo "repository_field: none"
  fi
  # String literals of the checkout's src/RModularityOptimizer.cpp and its Rcpp registration,
  # which R CMD INSTALL compiles into Seurat.so: an ELF of another making (a stub package's
  # library built to pass `compiled`) lacks them.
  for lit in "Modularity Optimizer version 1.3.0 by Ludo Waltman and Nees Jan van Eck" \
    "Matrix contained no network data.  Check format." "_Seurat_RunModularityClusteringCpp"; do
    has_text "$SO" "$lit" && echo "string '$lit': yes" || echo "string '$lit': no"
  done
  [ -n "$LIB" ] && grep -E '^(Version|Built):' "$LIB/Seurat/DESCRIPTION" 2>/dev/null
} >"$LOG_DIR/library.txt" 2>&1
cp "$LOG_DIR/library.txt" "$LOG_DIR/01_library.log"

# The R that runs the workflow: Rscript (an ELF of r-base-core) execs R_HOME's bin/R, a shell
# script that reads etc/ldpaths and execs bin/exec/R (an ELF); R then reads etc/Renviron and
# base's Rprofile even under the flags below. A stub in any of these places, or an edit of them,
# shows as `script`, an unpackaged `elf` or `none`.
vouch Rscript Rscript
vouch R /usr/lib/R/bin/exec/R
{
  for f in /usr/lib/R/bin/R /usr/lib/R/etc/ldpaths /usr/lib/R/library/base/R/Rprofile \
    /usr/lib/R/etc/Renviron.ucf; do
    echo "file $f $(hook_owner "$(dirname "$f")" "$f")"
  done
  # etc/Renviron is ucf's, not dpkg's: r-base-core's postinst writes it from the packaged
  # Renviron.ucf with paperconf's size put into the R_PAPERSIZE_USER line; anything else that
  # differs (an R_PROFILE, R_LIBS, R_DEFAULT_PACKAGES of the agent's) shows.
  if [ "$(grep -v '^R_PAPERSIZE_USER=' /usr/lib/R/etc/Renviron 2>/dev/null | md5sum)" \
    = "$(grep -v '^R_PAPERSIZE_USER=' /usr/lib/R/etc/Renviron.ucf 2>/dev/null | md5sum)" ]; then
    echo "file /usr/lib/R/etc/Renviron as-Renviron.ucf"
  else
    echo "file /usr/lib/R/etc/Renviron none differs-from-Renviron.ucf"
  fi
} >"$LOG_DIR/r_startup.txt"
echo end >>"$LOG_DIR/r_startup.txt"

# The hidden input: how many of pbmc_small's cells, and which (R's set.seed before sample()):
# the controller's draw ($VARIANT_CELLS, $VARIANT_SEED; checks.yaml's variants), so the operator's
# bank holds what the real workflow gives for them. Without the controller's draw, picked here.
CELLS=${VARIANT_CELLS:-$(($(rand_below 40) + 40))}
SEED=${VARIANT_SEED:-$(($(rand_below 99999) + 1))}
echo "cells: $CELLS" >"$LOG_DIR/expected_cells.txt"

cat >"$SCRATCH/verify.R" <<'RSCRIPT'
args <- commandArgs(trailingOnly = TRUE)
lib <- args[1]; out <- args[2]; ncells <- as.integer(args[3]); seed <- as.integer(args[4])
if (lib != "none") .libPaths(c(lib, .libPaths()))
suppressPackageStartupMessages(library(Seurat))
summ <- file.path(out, "summary.txt")
say <- function(...) cat(..., "\n", sep = "", file = summ, append = TRUE)
say("seurat_version: ", as.character(packageVersion("Seurat")))
say("seurat_path: ", normalizePath(find.package("Seurat")))
say("seuratobject_version: ", as.character(packageVersion("SeuratObject")))
set.seed(seed)
counts <- GetAssayData(pbmc_small, slot = "counts")
counts <- counts[, sort(sample(colnames(counts), ncells))]
obj <- CreateSeuratObject(counts = counts, project = "verify")
obj <- NormalizeData(obj, verbose = FALSE)
obj <- FindVariableFeatures(obj, verbose = FALSE)
obj <- ScaleData(obj, verbose = FALSE)
obj <- RunPCA(obj, npcs = 15, verbose = FALSE)
other <- setdiff(rownames(obj), VariableFeatures(obj)[1:100])
obj <- RunPCA(obj, features = other, npcs = 8, reduction.name = "apca", reduction.key = "APC_",
              verbose = FALSE)
obj <- FindNeighbors(obj, dims = 1:10, verbose = FALSE)
obj <- FindClusters(obj, resolution = 1.2, verbose = FALSE)
say("pc1_stdev: ", sprintf("%.6f", Stdev(obj, reduction = "pca")[1]))
say("rna_clusters: ", length(unique(obj$RNA_snn_res.1.2)))
say("rna_sizes: ", paste(sort(as.vector(table(obj$RNA_snn_res.1.2)), decreasing = TRUE), collapse = "-"))
obj <- FindMultiModalNeighbors(obj, reduction.list = list("pca", "apca"),
                               dims.list = list(1:10, 1:6), k.nn = 8, knn.range = 30,
                               verbose = FALSE)
obj <- FindClusters(obj, graph.name = "wsnn", resolution = 1.2, verbose = FALSE)
say("wsnn_clusters: ", length(unique(obj$wsnn_res.1.2)))
say("wsnn_sizes: ", paste(sort(as.vector(table(obj$wsnn_res.1.2)), decreasing = TRUE), collapse = "-"))
obj <- RunUMAP(obj, dims = 1:10, n.neighbors = 15, verbose = FALSE)
say("reductions: ", paste(Reductions(obj), collapse = " "))
say("graphs: ", paste(Graphs(obj), collapse = " "))
emb <- Embeddings(obj, "umap")
say("umap_dims: ", nrow(emb), " x ", ncol(emb))
say("umap_finite: ", all(is.finite(emb)))
cat("cells: ", ncol(obj), "\n", sep = "", file = file.path(out, "cells.txt"))
saveRDS(obj, file.path(out, "verify.rds"))
png(file.path(out, "umap.png"), width = 600, height = 450)
print(DimPlot(obj, reduction = "umap"))
invisible(dev.off())
back <- readRDS(file.path(out, "verify.rds"))
say("rds_cells: ", ncol(back))
RSCRIPT
chmod 644 "$SCRATCH/verify.R"

{
  echo "== experiment: Rscript verify.R ${LIB:-none} (cells=$CELLS seed=$SEED)"
  cd "$SCRATCH" && rc_of workflow as_owner timeout 900 Rscript --no-environ --no-site-file --no-init-file "$SCRATCH/verify.R" \
    "${LIB:-none}" "$OUT" "$CELLS" "$SEED"
  echo "exit code: $(cat "$LOG_DIR/workflow.rc")"
  cat "$OUT/summary.txt" 2>/dev/null
} >"$LOG_DIR/02_workflow.log" 2>&1
collect "$OUT/summary.txt" summary.txt
collect "$OUT/cells.txt" cells.txt

# Was the loaded Seurat the agent's library (not the distribution's)?
{
  LOADED=$(sed -n 's/^seurat_path: //p' "$OUT/summary.txt" 2>/dev/null)
  REAL=$(readlink -f "$LIB/Seurat" 2>/dev/null)
  if [ -n "$LIB" ] && [ -n "$LOADED" ] && [ "$LOADED" = "$REAL" ]; then
    echo "loaded_from_agent_library: yes"
  else
    echo "loaded_from_agent_library: no"
  fi
  echo "loaded: ${LOADED:-none}"
} >"$LOG_DIR/loaded.txt" 2>&1
{
  for f in verify.rds umap.png; do
    if [ -s "$OUT/$f" ]; then echo "$f: $(head -c4 "$OUT/$f" | od -An -tx1 | tr -d ' \n')"; fi
  done
} >"$LOG_DIR/outputs.txt" 2>&1
