package splice.hadoop;

import org.apache.hadoop.fs.LocalFileSystem;

/** Hadoop's local file system (checksums and all) over the forkless raw one:
 *  {@code fs.file.impl}. */
public class ForklessLocalFileSystem extends LocalFileSystem {
  public ForklessLocalFileSystem() {
    super(new ForklessRawLocalFileSystem());
  }
}
